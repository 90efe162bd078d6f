package dev.gatun.cuda.internal.load;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Where to look for one native library, in order: an explicit override (system property, then
 * environment variable), then directories and the dynamic loader in the order given by
 * {@link #steps()}. Each step is tried with every soname in order.
 *
 * @param displayName what the library is, for messages ("CUDA driver")
 * @param definiteName the same with its article, for "... is not {@code definiteName}" ("the CUDA driver")
 * @param property the system property that overrides the search
 * @param environment the environment variable that overrides the search
 * @param sonames file names to try, most wanted first
 * @param steps directories ({@link Step#directory}) and the dynamic loader ({@link Step#dynamicLoader})
 * @param probeSymbol a symbol the library must export: a library without it is some other library
 * @param installHint what to install, for the message when nothing is found
 */
public record LibrarySpec(String displayName, String definiteName, String property, String environment,
        List<String> sonames, List<Step> steps, String probeSymbol, String installHint) {

    public LibrarySpec {
        sonames = List.copyOf(sonames);
        steps = List.copyOf(steps);
    }

    /** One place to look: a directory, or the system's dynamic loader search. */
    public record Step(String directory) {
        private static final Step DYNAMIC_LOADER = new Step(null);

        public static Step directory(String path) {
            return new Step(path);
        }

        public static Step dynamicLoader() {
            return DYNAMIC_LOADER;
        }

        /**
         * The directories {@code below} (e.g. {@code "lib64"}) each toolkit named by
         * {@code CUDA_HOME}, then by {@code CUDA_PATH}, as {@code environment} reads them; an
         * unset or blank variable names none. For every library of the toolkit (NVRTC, cuBLAS,
         * cuDNN's neighbours, CUPTI).
         */
        public static List<Step> inToolkitHomes(UnaryOperator<String> environment, String... below) {
            List<Step> steps = new ArrayList<>();
            for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
                String home = environment.apply(variable);
                if (home != null && !home.isBlank()) {
                    for (String directory : below) {
                        steps.add(directory(home.trim() + "/" + directory));
                    }
                }
            }
            return steps;
        }

        public boolean isDynamicLoader() {
            return directory == null;
        }
    }
}
