package dev.gatun.cuda.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The driver functions Gatun lists (cuda-bindings/jextract/driver.functions, from which the build
 * generates the DriverApi seam) and the places runtime-core's main code calls them, read from the
 * sources. Paths are relative to runtime-core, surefire's working directory (its default, the
 * module's base directory).
 */
final class DriverFunctions {

    /** The list the build generates the driver seam from. */
    static final Path LIST = Path.of("..", "cuda-bindings", "jextract", "driver.functions");
    /** runtime-core's main sources. */
    static final Path MAIN = Path.of("src", "main", "java");
    /** Layer 2, the one choke point: the only code that holds the DriverApi. */
    static final Path LAYER_2 = MAIN.resolve(Path.of("dev", "gatun", "cuda", "internal", "driver"));

    /** {@code c.api.cuX(} in the typed calls, {@code api.cuX(} in Driver and Checked (which own the api field). */
    private static final Pattern CALL = Pattern.compile("\\bapi\\.(cu[A-Z]\\w*)\\(");
    /** The typed calls' form of {@link #CALL}, through their {@code Checked c}. */
    private static final Pattern TYPED_CALL = Pattern.compile("\\bc\\.api\\.(cu[A-Z]\\w*)\\(");
    /** Any call of a driver function, by whatever receiver. */
    private static final Pattern ANY_CALL = Pattern.compile("\\.(cu[A-Z]\\w*)\\(");
    private static final Pattern COMMENT = Pattern.compile("(?s)/\\*.*?\\*/|//[^\\n]*");

    private DriverFunctions() {
    }

    /** The functions in driver.functions, in its order. */
    static List<String> listed() {
        List<String> functions = new ArrayList<>();
        for (String line : lines(LIST)) {
            String s = line.strip();
            if (!s.isEmpty() && !s.startsWith("#")) {
                functions.add(s.split("\\s+")[0]); // the function, before its version
            }
        }
        return List.copyOf(functions);
    }

    /** Per driver function, how many call sites layer 2 has ({@code api.cuX(}, comments left out). */
    static Map<String, Integer> layer2CallSites() {
        return count(CALL, sources(LAYER_2));
    }

    /** Per source file of runtime-core's main code outside layer 2, the driver functions it calls: none, if layer 2 is the one choke point. */
    static Map<String, Map<String, Integer>> callsOutsideLayer2() {
        Map<String, Map<String, Integer>> outside = new TreeMap<>();
        for (Path file : sources(MAIN)) {
            if (!file.startsWith(LAYER_2)) {
                Map<String, Integer> calls = count(ANY_CALL, List.of(file));
                if (!calls.isEmpty()) {
                    outside.put(file.toString(), calls);
                }
            }
        }
        return outside;
    }

    /** How many of layer 2's call sites are written {@code c.api.cuX(} (the typed calls; the rest are Driver's and Checked's own). */
    static int typedCallSites() {
        return count(TYPED_CALL, sources(LAYER_2)).values().stream().mapToInt(Integer::intValue).sum();
    }

    private static Map<String, Integer> count(Pattern pattern, List<Path> files) {
        Map<String, Integer> counts = new TreeMap<>();
        for (Path file : files) {
            Matcher m = pattern.matcher(code(file));
            while (m.find()) {
                counts.merge(m.group(1), 1, Integer::sum);
            }
        }
        return counts;
    }

    /** A source file without its comments, so that a function named in a comment is no call. */
    private static String code(Path file) {
        try {
            return COMMENT.matcher(Files.readString(file)).replaceAll(" ");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<Path> sources(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalStateException(dir.toAbsolutePath() + " is not a directory: this test reads runtime-core's "
                    + "sources and runs from runtime-core (surefire's default working directory)");
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(f -> f.toString().endsWith(".java")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<String> lines(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalStateException(file.toAbsolutePath() + " is missing: this test reads driver.functions "
                    + "relative to runtime-core (surefire's default working directory)");
        }
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
