package dev.gatun.cuda.internal.load;

import dev.gatun.cuda.CudaUnavailableException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/** Where Gatun looks for the CUDA driver and for NVRTC, and what it tells the user when it fails. */
public final class CudaLibraries {

    private CudaLibraries() {
    }

    /**
     * The driver: override, then the dynamic loader, then the places drivers are installed by
     * container runtimes (/usr/local/nvidia), distributions, and WSL.
     */
    public static final LibrarySpec DRIVER = new LibrarySpec("CUDA driver", "the CUDA driver", "gatun.cuda.driver",
            "GATUN_CUDA_DRIVER", List.of("libcuda.so.1"),
            List.of(LibrarySpec.Step.dynamicLoader(),
                    LibrarySpec.Step.directory("/usr/local/nvidia/lib64"),
                    LibrarySpec.Step.directory("/usr/lib/x86_64-linux-gnu"),
                    LibrarySpec.Step.directory("/usr/lib64"),
                    LibrarySpec.Step.directory("/usr/lib/wsl/lib")),
            "cuInit",
            "Install the NVIDIA GPU driver (it provides libcuda.so.1), or point Gatun at it with "
                    + "-Dgatun.cuda.driver=/path/to/libcuda.so.1 or GATUN_CUDA_DRIVER=/path/to/libcuda.so.1.");

    /**
     * NVRTC: override, then the toolkit named by CUDA_HOME / CUDA_PATH, then the default toolkit
     * location, then the dynamic loader; sonames of CUDA 13, then 12, then the unversioned link.
     */
    public static LibrarySpec nvrtc(UnaryOperator<String> environment) {
        List<LibrarySpec.Step> steps = new ArrayList<>(LibrarySpec.Step.inToolkitHomes(environment, "lib64"));
        steps.add(LibrarySpec.Step.directory("/usr/local/cuda/lib64"));
        steps.add(LibrarySpec.Step.dynamicLoader());
        return new LibrarySpec("NVRTC", "NVRTC", "gatun.nvrtc", "GATUN_NVRTC",
                List.of("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"), steps, "nvrtcVersion",
                "Install the CUDA toolkit's NVRTC (e.g. the cuda-nvrtc package), set CUDA_HOME to the toolkit, "
                        + "or point Gatun at the library with -Dgatun.nvrtc=/path/to/libnvrtc.so.13 or GATUN_NVRTC.");
    }

    /**
     * The exception for a failed search: every attempt, then what to do. When the user named the
     * library, the message names the property or variable and what is wrong with its path, and
     * does not advise setting what is already set.
     */
    public static CudaUnavailableException unavailable(LibrarySpec spec, LibrarySearch.Result failed) {
        StringBuilder sb = new StringBuilder();
        if (failed.override() == null) {
            sb.append("No ").append(spec.displayName()).append(" could be loaded. Tried:");
        } else {
            String name = spec.definiteName();
            sb.append(Character.toUpperCase(name.charAt(0))).append(name.substring(1)).append(" named by ")
                    .append(failed.override()).append(" could not be loaded:");
        }
        for (String attempt : failed.attempts()) {
            sb.append("\n  - ").append(attempt);
        }
        sb.append("\n");
        if (failed.override() == null) {
            sb.append(spec.installHint());
        } else {
            sb.append("Correct or remove ").append(failed.override()).append(": it must name ")
                    .append(spec.definiteName()).append(" (").append(String.join(", ", spec.sonames()))
                    .append(") or a directory holding it; without it, Gatun searches the usual places.");
        }
        return new CudaUnavailableException(sb.toString(), failed.attempts());
    }
}
