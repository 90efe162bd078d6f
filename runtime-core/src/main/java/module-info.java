/**
 * Gatun's runtime: owners for CUDA contexts, streams, events, memory, modules, kernels, stream
 * captures and graphs, and NVRTC compilation. API: {@code dev.gatun.cuda},
 * {@code dev.gatun.cuda.nvrtc} (which depends on the first, never the other way) and
 * {@code dev.gatun.cuda.doctor} (the report on both that {@code gatun doctor} prints) and
 * {@code dev.gatun.cuda.nvtx} (NVTX ranges and markers for profilers).
 */
module dev.gatun.cuda {
    requires dev.gatun.cuda.bindings;
    requires jdk.jfr;
    requires org.slf4j;

    exports dev.gatun.cuda;
    exports dev.gatun.cuda.nvrtc;
    exports dev.gatun.cuda.doctor;
    exports dev.gatun.cuda.nvtx;
    // Nothing else to the world (api/gatun-core.api records this module's exports). One module of
    // Gatun's own gets more: gatun-testkit's simulated driver implements the driver seam
    // (internal.driver's DriverApi, the one interface every driver call of the runtime goes
    // through, generated from the driver's function list), and puts it under the API through
    // Cuda's package-private constructor, as Cuda.system() puts the real driver. Neither is API:
    // a public SPI would freeze the generated seam (a new driver function would be an API
    // change), so the testkit, released with this jar, is the one module that reaches them.
    exports dev.gatun.cuda.internal.driver to dev.gatun.testkit;
    opens dev.gatun.cuda to dev.gatun.testkit;
    // gatun-blas (cuBLAS, cuBLASLt, cuDNN) and gatun-profiling (CUPTI) find their libraries with
    // the driver's own search (LibrarySearch, LibrarySpec: the override, the usual directories,
    // the dynamic loader, every path tried in the failure): the loader is shared, not copied.
    // Released with this jar; not API, as for the testkit above. Nothing here depends on those
    // modules: without them, this line changes nothing.
    exports dev.gatun.cuda.internal.load to dev.gatun.cuda.blas, dev.gatun.cuda.profiling;

    // Sections other modules add to the doctor's report (gatun-blas: its libraries).
    uses dev.gatun.cuda.doctor.DoctorSection;

    // The generated bindings' raw calls resolve in the driver and NVRTC this runtime opened.
    provides dev.gatun.cuda.bindings.NativeLibraryProvider with dev.gatun.cuda.internal.load.SystemLibraries;
}
