/**
 * jextract bindings for the CUDA driver API ({@code cuda.h}) and NVRTC ({@code nvrtc.h}) of
 * CUDA 13.0. Generated without {@code -l}: no class here loads a native library, so the
 * constants work on any machine. The generated functions resolve their symbols through
 * {@link dev.gatun.cuda.bindings.NativeLibrary}, in the library that the runtime (the
 * {@link dev.gatun.cuda.bindings.NativeLibraryProvider} of this module's class loader) opened.
 */
module dev.gatun.cuda.bindings {
    exports dev.gatun.cuda.bindings;
    exports dev.gatun.cuda.bindings.driver;
    exports dev.gatun.cuda.bindings.nvrtc;

    uses dev.gatun.cuda.bindings.NativeLibraryProvider;
}
