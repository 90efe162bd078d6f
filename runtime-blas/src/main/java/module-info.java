/**
 * Gatun's BLAS module: cuBLAS GEMMs, cuBLASLt matmuls with fused epilogues and cuDNN softmax as
 * submissions on runtime-core's streams ({@code Stream.submitForeign}), with handles per context
 * and one capture-safe workspace per stream. Its own generated bindings live in internal packages.
 */
module dev.gatun.cuda.blas {
    // Transitive: the API speaks in core's types (CudaContext, Stream, DeviceView).
    requires transitive dev.gatun.cuda;
    requires dev.gatun.cuda.bindings;
    requires org.slf4j;

    exports dev.gatun.cuda.blas;

    // Its libraries in gatun doctor's report (runtime-core finds the section; it does not depend on this module).
    provides dev.gatun.cuda.doctor.DoctorSection with dev.gatun.cuda.blas.BlasDoctorSection;
}
