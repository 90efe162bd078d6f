/**
 * jextract bindings for the CUDA driver API ({@code cuda.h}) and NVRTC ({@code nvrtc.h}) of
 * CUDA 13.0. Generated without {@code -l}: no class here loads a native library, so the
 * constants work on any machine and the runtime decides where libcuda and libnvrtc come from.
 */
module dev.gatun.cuda.bindings {
    exports dev.gatun.cuda.bindings.driver;
    exports dev.gatun.cuda.bindings.nvrtc;
}
