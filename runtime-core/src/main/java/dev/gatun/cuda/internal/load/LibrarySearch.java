package dev.gatun.cuda.internal.load;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Runs a {@link LibrarySpec} against a {@link Linkage}. Pure logic: the environment, the system
 * properties and the file system check are inputs, so the whole order can be tested on a
 * machine with no GPU.
 */
public final class LibrarySearch {

    /** The library found (path and how), or every attempt and why it failed. */
    public record Result(Path path, String how, List<String> attempts) {
        public boolean found() {
            return path != null;
        }
    }

    /** File existence, behind a seam for tests. */
    public interface FileCheck {
        boolean isRegularFile(Path path);

        boolean isDirectory(Path path);

        FileCheck REAL = new FileCheck() {
            @Override
            public boolean isRegularFile(Path path) {
                return Files.isRegularFile(path);
            }

            @Override
            public boolean isDirectory(Path path) {
                return Files.isDirectory(path);
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
        String override = properties.apply(spec.property());
        String overrideSource = "system property " + spec.property();
        if (isBlank(override)) {
            override = environment.apply(spec.environment());
            overrideSource = "environment variable " + spec.environment();
        }
        if (!isBlank(override)) {
            // An explicit override is what the user asked for: no silent fallback to a
            // different library if it fails.
            Path path = Path.of(override.trim());
            if (files.isDirectory(path)) {
                for (String soname : spec.sonames()) {
                    Result r = tryFile(path.resolve(soname), overrideSource, attempts);
                    if (r != null) {
                        return r;
                    }
                }
            } else {
                Result r = tryFile(path, overrideSource, attempts);
                if (r != null) {
                    return r;
                }
            }
            return new Result(null, null, attempts);
        }
        for (LibrarySpec.Step step : spec.steps()) {
            for (String soname : spec.sonames()) {
                Result r = step.isDynamicLoader()
                        ? tryName(soname, spec.probeSymbol(), attempts)
                        : tryFile(Path.of(step.directory()).resolve(soname), "directory " + step.directory(),
                                attempts);
                if (r != null) {
                    return r;
                }
            }
        }
        return new Result(null, null, attempts);
    }

    private Result tryFile(Path path, String source, List<String> attempts) {
        if (!path.isAbsolute()) {
            attempts.add(path + " (from " + source + "): not an absolute path");
            return null;
        }
        if (!files.isRegularFile(path)) {
            attempts.add(path + ": no such file");
            return null;
        }
        Linkage.Outcome outcome = linkage.loadFile(path);
        if (outcome.succeeded()) {
            return new Result(outcome.loaded(), source, attempts);
        }
        attempts.add(path + ": " + outcome.failure());
        return null;
    }

    private Result tryName(String soname, String probeSymbol, List<String> attempts) {
        Linkage.Outcome outcome = linkage.loadByName(soname, probeSymbol);
        if (outcome.succeeded()) {
            return new Result(outcome.loaded(), "dynamic loader (" + soname + ")", attempts);
        }
        attempts.add(soname + " via the dynamic loader: " + outcome.failure());
        return null;
    }

    private static boolean isBlank(String s) {
        return s == null || s.isBlank();
    }
}
