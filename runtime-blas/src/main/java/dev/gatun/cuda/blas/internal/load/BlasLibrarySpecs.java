package dev.gatun.cuda.blas.internal.load;

import dev.gatun.cuda.internal.load.LibrarySpec;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Where Gatun looks for cuBLASLt, cuBLAS and cuDNN: an override (system property, then
 * environment variable), then the toolkit named by {@code CUDA_HOME} / {@code CUDA_PATH}, the
 * default toolkit's two library directories, the distribution's library directory, then the
 * dynamic loader; as runtime-core looks for NVRTC. Only the major version the bindings were
 * generated for is tried by soname ({@code .so.13}, {@code .so.9}): another major has another ABI.
 */
public final class BlasLibrarySpecs {

    private BlasLibrarySpecs() {
    }

    /** cuBLASLt: {@code -Dgatun.cublaslt} or {@code GATUN_CUBLASLT}, then the usual places. */
    public static LibrarySpec cublasLt(UnaryOperator<String> environment) {
        return new LibrarySpec("cuBLASLt", "cuBLASLt", "gatun.cublaslt", "GATUN_CUBLASLT",
                List.of("libcublasLt.so.13"), toolkitSteps(environment), "cublasLtCreate",
                "Install cuBLAS 13 (the CUDA toolkit's libcublas, or the pip package nvidia-cublas), set CUDA_HOME to "
                        + "the toolkit, or point Gatun at the library with -Dgatun.cublaslt=/path/to/libcublasLt.so.13 "
                        + "or GATUN_CUBLASLT.");
    }

    /** cuBLAS: {@code -Dgatun.cublas} or {@code GATUN_CUBLAS}, then the usual places. */
    public static LibrarySpec cublas(UnaryOperator<String> environment) {
        return new LibrarySpec("cuBLAS", "cuBLAS", "gatun.cublas", "GATUN_CUBLAS", List.of("libcublas.so.13"),
                toolkitSteps(environment), "cublasCreate_v2",
                "Install cuBLAS 13 (the CUDA toolkit's libcublas, or the pip package nvidia-cublas), set CUDA_HOME to "
                        + "the toolkit, or point Gatun at the library with -Dgatun.cublas=/path/to/libcublas.so.13 or "
                        + "GATUN_CUBLAS.");
    }

    /** cuDNN: {@code -Dgatun.cudnn} or {@code GATUN_CUDNN}, then the usual places. */
    public static LibrarySpec cudnn(UnaryOperator<String> environment) {
        return new LibrarySpec("cuDNN", "cuDNN", "gatun.cudnn", "GATUN_CUDNN", List.of("libcudnn.so.9"),
                toolkitSteps(environment), "cudnnCreate",
                "Install cuDNN 9 for CUDA 13 (the distribution's libcudnn9-cuda-13 package, or the pip package "
                        + "nvidia-cudnn-cu13), or point Gatun at the library with -Dgatun.cudnn=/path/to/libcudnn.so.9 "
                        + "or GATUN_CUDNN.");
    }

    private static List<LibrarySpec.Step> toolkitSteps(UnaryOperator<String> environment) {
        List<LibrarySpec.Step> steps = new ArrayList<>(LibrarySpec.Step.inToolkitHomes(environment, "lib64"));
        steps.add(LibrarySpec.Step.directory("/usr/local/cuda/lib64"));
        steps.add(LibrarySpec.Step.directory("/usr/local/cuda/targets/x86_64-linux/lib"));
        steps.add(LibrarySpec.Step.directory("/usr/lib/x86_64-linux-gnu"));
        steps.add(LibrarySpec.Step.dynamicLoader());
        return steps;
    }
}
