package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.nvrtc.CompileOptions;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * One compilation exactly as NVRTC will see it: the source, the options object, the include
 * directories actually used and the full argument list, and the NVRTC that will compile it.
 * Both the compile and its cache key are derived from this, so they cannot drift apart.
 */
public final class CompileRequest {

    private final String source;
    private final CompileOptions options;
    private final List<Path> callerIncludeDirectories;
    private final List<Path> toolkitIncludeDirectories;
    private final List<Path> includeDirectories;
    private final List<String> arguments;
    private final String nvrtcVersion;

    /**
     * @param toolkitIncludeDirectories from {@link ToolkitHeaders}, searched after the caller's
     * @throws IllegalArgumentException when the source is null or holds a NUL character
     */
    public CompileRequest(String source, CompileOptions options, List<Path> toolkitIncludeDirectories,
            String nvrtcVersion) {
        Objects.requireNonNull(options, "options");
        if (source == null) {
            throw new IllegalArgumentException("source must not be null");
        }
        int nul = source.indexOf('\0');
        if (nul >= 0) {
            throw new IllegalArgumentException("source of " + options.programName() + " has a NUL character at index "
                    + nul + "; NVRTC reads the source as a C string and would silently drop the rest");
        }
        this.source = source;
        this.options = options;
        this.nvrtcVersion = Objects.requireNonNull(nvrtcVersion, "nvrtcVersion");
        LinkedHashSet<Path> callers = new LinkedHashSet<>(options.includeDirectories());
        this.callerIncludeDirectories = List.copyOf(callers);
        this.toolkitIncludeDirectories = toolkitIncludeDirectories.stream().filter(dir -> !callers.contains(dir))
                .distinct().toList();
        List<Path> dirs = new ArrayList<>(callerIncludeDirectories);
        dirs.addAll(this.toolkitIncludeDirectories);
        this.includeDirectories = List.copyOf(dirs);
        List<String> args = new ArrayList<>();
        args.add(options.target().gpuArchOption());
        for (Path dir : includeDirectories) {
            args.add("-I" + dir);
        }
        args.addAll(options.options());
        this.arguments = List.copyOf(args);
    }

    public String source() {
        return source;
    }

    public CompileOptions options() {
        return options;
    }

    /** The caller's include directories, without duplicates. */
    public List<Path> callerIncludeDirectories() {
        return callerIncludeDirectories;
    }

    /** The toolkit's include directories, without duplicates and without those the caller names too. */
    public List<Path> toolkitIncludeDirectories() {
        return toolkitIncludeDirectories;
    }

    /** The caller's include directories, then the toolkit's, without duplicates. */
    public List<Path> includeDirectories() {
        return includeDirectories;
    }

    /** What NVRTC receives: the architecture, one {@code -I} per include directory, then the caller's options. */
    public List<String> arguments() {
        return arguments;
    }

    public String nvrtcVersion() {
        return nvrtcVersion;
    }
}
