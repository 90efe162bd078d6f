/**
 * Gatun's runtime: owners for CUDA contexts, streams, events, memory, modules, kernels, stream
 * captures and graphs, and NVRTC compilation. API: {@code dev.gatun.cuda},
 * {@code dev.gatun.cuda.nvrtc} (which depends on the first, never the other way) and
 * {@code dev.gatun.cuda.doctor} (the report on both that {@code gatun doctor} prints).
 */
module dev.gatun.cuda {
    requires dev.gatun.cuda.bindings;
    requires jdk.jfr;
    requires org.slf4j;

    exports dev.gatun.cuda;
    exports dev.gatun.cuda.nvrtc;
    exports dev.gatun.cuda.doctor;
    // Nothing else, not even to Gatun's own modules: they use the API above (api/gatun-core.api
    // records this module's exports).

    // The generated bindings' raw calls resolve in the driver and NVRTC this runtime opened.
    provides dev.gatun.cuda.bindings.NativeLibraryProvider with dev.gatun.cuda.internal.load.SystemLibraries;
}
