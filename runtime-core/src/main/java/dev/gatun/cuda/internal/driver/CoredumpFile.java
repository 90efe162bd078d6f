package dev.gatun.cuda.internal.driver;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Comparator;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The GPU coredump a poisoned context left, found from the file pattern the driver reported
 * ({@code CU_COREDUMP_FILE}), and what the context's {@code ContextPoisonedException} says about it.
 *
 * <p>The driver expands {@code %p} to the process id, {@code %h} to the host name and {@code %t}
 * to the time. The first two are known here exactly (the host name as the kernel reports it,
 * {@code /proc/sys/kernel/hostname}, which is what {@code gethostname} answers); the time is not,
 * so a pattern with {@code %t} (or any other {@code %} sequence) is matched against the listing of
 * its directory, and the newest match is named, saying so.
 *
 * @param file the dump, when its name is known exactly or a listing found it
 * @param written whether it was on disk when looked for (a known name alone is not enough)
 * @param note what the exception says: where the dump is and how to open it, or why none was found
 */
record CoredumpFile(Optional<Path> file, boolean written, String note) {

    /** Dumps were off: nothing to say. */
    static final CoredumpFile NONE = new CoredumpFile(Optional.empty(), false, "");

    private static final Path HOSTNAME = Path.of("/proc/sys/kernel/hostname");

    /** The dump for {@code pattern} in this process, looked for now (the driver wrote it before the failing call returned). */
    static CoredumpFile find(String pattern) {
        return find(pattern, ProcessHandle.current().pid(), hostName());
    }

    /**
     * @param host the host name, or null when it cannot be read (then {@code %h} is matched as any text)
     */
    static CoredumpFile find(String pattern, long pid, String host) {
        int slash = pattern.lastIndexOf('/');
        String directoryPart = slash < 0 ? "." : slash == 0 ? "/" : pattern.substring(0, slash);
        String namePart = pattern.substring(slash + 1);
        StringBuilder literal = new StringBuilder();
        StringBuilder regex = new StringBuilder();
        boolean exact = expand(namePart, pid, host, literal, regex);
        StringBuilder directory = new StringBuilder();
        if (!expand(directoryPart, pid, host, directory, new StringBuilder())) {
            return new CoredumpFile(Optional.empty(), false, "GPU coredumps were on (file pattern " + pattern + "); its "
                    + "directory has a part Gatun cannot expand, so look for the dump there yourself");
        }
        Path dir = Path.of(directory.toString());
        if (exact) {
            Path file = dir.resolve(literal.toString());
            return Files.isRegularFile(file)
                    ? new CoredumpFile(Optional.of(file), true, "the driver wrote a GPU coredump to " + file
                            + opening(file))
                    : new CoredumpFile(Optional.of(file), false, "GPU coredumps were on, but " + file + " (file pattern "
                            + pattern + ") did not exist when the context was poisoned; the driver may still be "
                            + "writing it, or could not (see the driver's log)" + opening(file));
        }
        Optional<Path> newest = newestMatch(dir, Pattern.compile(regex.toString()));
        return newest.map(file -> new CoredumpFile(newest, true, "the driver wrote a GPU coredump to " + file
                        + " (the newest file in " + dir + " matching the pattern " + pattern + ")" + opening(file)))
                .orElseGet(() -> new CoredumpFile(Optional.empty(), false, "GPU coredumps were on (file pattern " + pattern
                        + "), but no file in " + dir + " matched it when the context was poisoned"));
    }

    private static String opening(Path file) {
        return "; open it with: cuda-gdb -ex \"target cudacore " + file + "\"";
    }

    /**
     * Expands {@code part} into {@code literal} and {@code regex}; false when it holds a sequence
     * only a listing can match ({@code %t}, an unknown one, or {@code %h} without a host name).
     */
    private static boolean expand(String part, long pid, String host, StringBuilder literal, StringBuilder regex) {
        boolean exact = true;
        for (int i = 0; i < part.length(); i++) {
            char ch = part.charAt(i);
            char next = ch == '%' && i + 1 < part.length() ? part.charAt(i + 1) : 0;
            String known = next == 'p' ? Long.toString(pid) : next == 'h' ? host : next == '%' ? "%" : null;
            if (known != null) {
                literal.append(known);
                regex.append(Pattern.quote(known));
                i++;
            } else if (next == 't') {
                exact = false;
                regex.append("[0-9]+");
                i++;
            } else if (next != 0) {
                exact = false;
                regex.append(".*");
                i++;
            } else {
                literal.append(ch);
                regex.append(Pattern.quote(String.valueOf(ch)));
            }
        }
        return exact;
    }

    private static Optional<Path> newestMatch(Path dir, Pattern name) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> name.matcher(f.getFileName().toString()).matches() && Files.isRegularFile(f))
                    .max(Comparator.comparing(CoredumpFile::modified));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static FileTime modified(Path file) {
        try {
            return Files.getLastModifiedTime(file);
        } catch (IOException e) {
            return FileTime.fromMillis(0);
        }
    }

    /** The host name the driver puts for {@code %h}, or null when it cannot be read. */
    private static String hostName() {
        try {
            String name = Files.readString(HOSTNAME).strip();
            return name.isEmpty() ? null : name;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
