package dev.gatun.cuda.internal.load;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Runs a {@link LibrarySpec} against a {@link Linkage}. Pure logic: the environment, the system
 * properties and the file system check are inputs, so the whole order can be tested on a
 * machine with no GPU. Every candidate, however it was found, must export the spec's probe
 * symbol: a library without it is some other library, and is reported as such.
 */
public final class LibrarySearch {

    /**
     * The library found (its path, how it was found, and its symbols to resolve downcalls in),
     * or every attempt and why it failed.
     *
     * @param override where the user named the library ("system property gatun.cuda.driver"),
     *        or null when the search ran
     */
    public record Result(Path path, String how, SymbolLookup symbols, String override, List<String> attempts) {
        public Result {
            attempts = List.copyOf(attempts);
        }

        public boolean found() {
            return symbols != null;
        }
    }

    /** File existence, behind a seam for tests. */
    public interface FileCheck {
        boolean isRegularFile(Path path);

        boolean isDirectory(Path path);

        /** Whether anything is at {@code path}; fakes that know only files and directories need not say. */
        default boolean exists(Path path) {
            return isRegularFile(path) || isDirectory(path);
        }

        FileCheck REAL = new FileCheck() {
            @Override
            public boolean isRegularFile(Path path) {
                return Files.isRegularFile(path);
            }

            @Override
            public boolean isDirectory(Path path) {
                return Files.isDirectory(path);
            }

            @Override
            public boolean exists(Path path) {
                return Files.exists(path);
            }
        };
    }

    private final Linkage linkage;
    private final UnaryOperator<String> environment;
    private final UnaryOperator<String> properties;
    private final FileCheck files;

    /**
     * @param environment reads an environment variable (null when unset)
     * @param properties reads a system property (null when unset)
     */
    public LibrarySearch(Linkage linkage, UnaryOperator<String> environment, UnaryOperator<String> properties,
            FileCheck files) {
        this.linkage = linkage;
        this.environment = environment;
        this.properties = properties;
        this.files = files;
    }

    /** A search of the real process: its environment, system properties, files and loader. */
    public static LibrarySearch ofProcess() {
        return new LibrarySearch(SystemLinkage.INSTANCE, System::getenv, System::getProperty, FileCheck.REAL);
    }

    public Result find(LibrarySpec spec) {
        List<String> attempts = new ArrayList<>();
        String value = properties.apply(spec.property());
        String override = "system property " + spec.property();
        if (isBlank(value)) {
            value = environment.apply(spec.environment());
            override = "environment variable " + spec.environment();
        }
        if (!isBlank(value)) {
            // An explicit override is what the user asked for: no silent fallback to a
            // different library if it fails.
            for (Path candidate : overrideCandidates(value.trim(), spec, attempts)) {
                Result r = tryFile(candidate, override, spec, override, attempts);
                if (r != null) {
                    return r;
                }
            }
            return new Result(null, null, null, override, attempts);
        }
        for (LibrarySpec.Step step : spec.steps()) {
            for (String soname : spec.sonames()) {
                Result r = step.isDynamicLoader()
                        ? tryName(soname, spec, attempts)
                        : tryFile(Path.of(step.directory()).resolve(soname), "directory " + step.directory(), spec,
                                null, attempts);
                if (r != null) {
                    return r;
                }
            }
        }
        return new Result(null, null, null, null, attempts);
    }

    /** The file an override names, or every soname in the directory it names. */
    private List<Path> overrideCandidates(String value, LibrarySpec spec, List<String> attempts) {
        Path path;
        try {
            path = Path.of(value);
        } catch (InvalidPathException e) {
            attempts.add(value + " is not a valid path: " + e.getMessage());
            return List.of();
        }
        return files.isDirectory(path) ? spec.sonames().stream().map(path::resolve).toList() : List.of(path);
    }

    private Result tryFile(Path path, String how, LibrarySpec spec, String override, List<String> attempts) {
        if (!path.isAbsolute()) {
            attempts.add(path + " is not an absolute path");
            return null;
        }
        if (!files.isRegularFile(path)) {
            attempts.add(path + (files.exists(path) ? " is not a regular file" : " does not exist"));
            return null;
        }
        Linkage.Opened opened = linkage.open(path);
        if (!opened.succeeded()) {
            attempts.add(path + " " + opened.failure());
            return null;
        }
        if (opened.symbols().find(spec.probeSymbol()).isEmpty()) {
            attempts.add(path + notIt(spec));
            return null;
        }
        return new Result(path, how, opened.symbols(), override, attempts);
    }

    private Result tryName(String soname, LibrarySpec spec, List<String> attempts) {
        String attempt = soname + " via the dynamic loader";
        Linkage.Opened opened = linkage.open(soname);
        if (!opened.succeeded()) {
            attempts.add(attempt + ": " + opened.failure());
            return null;
        }
        Optional<MemorySegment> probe = opened.symbols().find(spec.probeSymbol());
        if (probe.isEmpty()) {
            attempts.add(attempt + notIt(spec));
            return null;
        }
        // The path is what messages and the user see ("which libcuda did it load?").
        Optional<Path> file = linkage.fileOf(probe.get());
        if (file.isEmpty()) {
            attempts.add(attempt + ": loaded, but dladdr could not tell which file it is");
            return null;
        }
        return new Result(file.get(), "dynamic loader (" + soname + ")", opened.symbols(), null, attempts);
    }

    private static String notIt(LibrarySpec spec) {
        return " is not " + spec.definiteName() + ": it has no " + spec.probeSymbol();
    }

    private static boolean isBlank(String s) {
        return s == null || s.isBlank();
    }
}
