package dev.gatun.cuda.nvrtc;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * Everything an {@link NvrtcCompiler} needs besides the source. Invalid values are rejected here,
 * before anything reaches NVRTC: a NUL character (it would silently cut the C string NVRTC
 * reads), a blank option, or an architecture option (the {@link CompileTarget} owns it, so the
 * cache key and the image can never disagree about the architecture).
 *
 * @param target what to produce, and for which architecture
 * @param programName the name NVRTC uses for the source in its log, e.g. {@code gemm.cu}
 * @param options extra NVRTC options, passed in this order after the architecture and include
 *     options, e.g. {@code -std=c++17}, {@code --use_fast_math}, {@code -lineinfo}, {@code -DTILE=64}
 * @param includeDirectories directories searched for {@code #include}, before the toolkit's;
 *     stored as absolute, normalized paths
 * @param nameExpressions C++ expressions, e.g. {@code &scale<float>}, whose lowered (mangled)
 *     names the result reports; duplicates are dropped, first occurrence kept
 */
public record CompileOptions(CompileTarget target, String programName, List<String> options,
        List<Path> includeDirectories, List<String> nameExpressions) {

    /** The program name used when none is given. */
    public static final String DEFAULT_PROGRAM_NAME = "kernel.cu";

    /** Checks and copies the components (see the parameters above). */
    public CompileOptions {
        Objects.requireNonNull(target, "target");
        requireText(programName, "program name");
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(includeDirectories, "includeDirectories");
        Objects.requireNonNull(nameExpressions, "nameExpressions");
        for (String option : options) {
            requireText(option, "NVRTC option");
            String trimmed = option.strip();
            if (trimmed.startsWith("-arch") || trimmed.startsWith("--gpu-arch")) {
                throw new IllegalArgumentException("option '" + option + "' sets the architecture, which the "
                        + "CompileTarget owns (" + target.gpuArchOption() + "); choose it with CompileTarget instead");
            }
        }
        options = List.copyOf(options);
        List<Path> absolute = new ArrayList<>(includeDirectories.size());
        for (Path dir : includeDirectories) {
            Objects.requireNonNull(dir, "include directory");
            requireText(dir.toString(), "include directory");
            // Relative paths would resolve against whatever the working directory is at compile
            // time, while the cache key would only see the relative spelling.
            absolute.add(dir.toAbsolutePath().normalize());
        }
        includeDirectories = List.copyOf(absolute);
        for (String expression : nameExpressions) {
            requireText(expression, "name expression");
        }
        nameExpressions = List.copyOf(new LinkedHashSet<>(nameExpressions));
    }

    /**
     * {@return these options with the target switched to CUBIN for the same architecture (itself when it
     * is CUBIN already)}
     */
    public CompileOptions asCubin() {
        if (target.kind() == CompileTarget.Kind.CUBIN) {
            return this;
        }
        return new CompileOptions(CompileTarget.cubin(target.major(), target.minor()), programName, options,
                includeDirectories, nameExpressions);
    }

    /**
     * Options with no extras: the default program name, no options, no includes, no names.
     *
     * @param target what to compile to
     * @return the options
     */
    public static CompileOptions of(CompileTarget target) {
        return builder(target).build();
    }

    /**
     * Options for {@code target}, with the default program name and no options, includes or name expressions.
     *
     * @param target what to compile to
     * @return a builder, to add to
     */
    public static Builder builder(CompileTarget target) {
        return new Builder(target);
    }

    private static void requireText(String value, String what) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(what + " must not be null or blank");
        }
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " '" + value.replace('\0', '?')
                    + "' contains a NUL character, which would cut it short in NVRTC; remove it");
        }
    }

    /** Collects options; {@link #build()} validates them. */
    public static final class Builder {
        private final CompileTarget target;
        private String programName = DEFAULT_PROGRAM_NAME;
        private final List<String> options = new ArrayList<>();
        private final List<Path> includeDirectories = new ArrayList<>();
        private final List<String> nameExpressions = new ArrayList<>();

        private Builder(CompileTarget target) {
            this.target = Objects.requireNonNull(target, "target");
        }

        /**
         * The name NVRTC uses for the source in its log, e.g. {@code gemm.cu}.
         *
         * @param name the program name
         * @return this builder
         */
        public Builder programName(String name) {
            this.programName = name;
            return this;
        }

        /**
         * Appends NVRTC options, in order.
         *
         * @param more the options, e.g. {@code --use_fast_math}
         * @return this builder
         */
        public Builder options(String... more) {
            // Arrays.asList, not List.of: a null element must reach the record's own check and
            // its message, not fail here with a bare NullPointerException.
            options.addAll(Arrays.asList(more));
            return this;
        }

        /**
         * Appends an include directory, searched after those added before it.
         *
         * @param directory the directory to search
         * @return this builder
         */
        public Builder includeDirectory(Path directory) {
            includeDirectories.add(directory);
            return this;
        }

        /**
         * Asks for the lowered name of a C++ expression, e.g. {@code &reduce<float, 256>}.
         *
         * @param expression the C++ expression
         * @return this builder
         */
        public Builder nameExpression(String expression) {
            nameExpressions.add(expression);
            return this;
        }

        /** {@return the options, checked} */
        public CompileOptions build() {
            return new CompileOptions(target, programName, options, includeDirectories, nameExpressions);
        }
    }
}
