/**
 * Gatun's runtime: owners for CUDA contexts, streams, events, memory, modules and kernels.
 * Only {@code dev.gatun.cuda} is API; the internal packages are shared with Gatun's graph module
 * alone.
 */
module dev.gatun.cuda {
    requires dev.gatun.cuda.bindings;
    requires org.slf4j;

    exports dev.gatun.cuda;
    exports dev.gatun.cuda.internal.driver to dev.gatun.cuda.graph;
    exports dev.gatun.cuda.internal.context to dev.gatun.cuda.graph;
}
