package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.internal.load.LibrarySearch.FileCheck;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the CUDA toolkit's include directories for NVRTC. NVRTC knows its built-in headers but
 * not the toolkit's ({@code cuda_fp16.h}, {@code cuda_bf16.h}, {@code mma.h}, ...), so kernels
 * that include them need {@code -I} options pointing at a toolkit.
 *
 * <p>Candidates, in order: {@code $CUDA_HOME/include}, {@code $CUDA_PATH/include},
 * {@code /usr/local/cuda/include}. A relative {@code CUDA_HOME} or {@code CUDA_PATH} is refused
 * with a warning, never resolved against the working directory. A candidate is kept only if it holds {@code cuda_fp16.h} or
 * {@code crt/mma.h}: the two live together in a toolkit install but in different pip wheels,
 * so requiring only one of them would drop a directory that supplies the other.
 *
 * <p>From CUDA 13 the toolkit keeps libcu++, CUB and Thrust in {@code include/cccl}, and its own
 * headers include them as {@code <cuda/std/...>} (cooperative groups does): a kept directory's
 * {@code cccl} subdirectory is passed too when it holds {@code cuda/std}.
 */
public final class ToolkitHeaders {

    private static final Logger LOG = LoggerFactory.getLogger(ToolkitHeaders.class);

    static final String DEFAULT_TOOLKIT_INCLUDE = "/usr/local/cuda/include";

    private ToolkitHeaders() {
    }

    /** The process's toolkit include directories. */
    public static List<Path> discover() {
        return discover(System::getenv, FileCheck.REAL);
    }

    /**
     * @param environment reads an environment variable (null when unset)
     * @param files the file system check
     * @return the kept directories, in search order, without duplicates
     */
    public static List<Path> discover(UnaryOperator<String> environment, FileCheck files) {
        List<Path> kept = new ArrayList<>();
        for (Path dir : candidates(environment)) {
            if (files.isRegularFile(dir.resolve("cuda_fp16.h")) || files.isRegularFile(dir.resolve("crt").resolve("mma.h"))) {
                kept.add(dir);
                Path cccl = dir.resolve("cccl");
                if (files.isDirectory(cccl.resolve("cuda").resolve("std"))) {
                    kept.add(cccl);
                }
            } else {
                LOG.debug("{} holds neither cuda_fp16.h nor crt/mma.h; not passed to NVRTC", dir);
            }
        }
        LOG.debug("toolkit include directories for NVRTC: {}", kept);
        return List.copyOf(kept);
    }

    static List<Path> candidates(UnaryOperator<String> environment) {
        Set<Path> candidates = new LinkedHashSet<>();
        for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
            String home = environment.apply(variable);
            if (home == null || home.isBlank()) {
                continue;
            }
            Path path;
            try {
                path = Path.of(home.strip());
            } catch (InvalidPathException e) {
                LOG.warn("{}={} is not a valid path ({}); its headers are not passed to NVRTC", variable, home, e.getMessage());
                continue;
            }
            if (!path.isAbsolute()) {
                // Resolved against the working directory, a header planted there would be
                // included in every compile: refused, as the library search refuses relative paths.
                LOG.warn("{}={} is not an absolute path; its headers are not passed to NVRTC: set {} to an absolute "
                        + "path", variable, home, variable);
                continue;
            }
            candidates.add(path.resolve("include").normalize());
        }
        candidates.add(Path.of(DEFAULT_TOOLKIT_INCLUDE));
        return List.copyOf(candidates);
    }
}
