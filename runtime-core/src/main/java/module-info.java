/**
 * Gatun's runtime: owners for CUDA contexts, streams, events, memory, modules, kernels, stream
 * captures and graphs. Only {@code dev.gatun.cuda} is API.
 */
module dev.gatun.cuda {
    requires dev.gatun.cuda.bindings;
    requires org.slf4j;

    exports dev.gatun.cuda;
}
