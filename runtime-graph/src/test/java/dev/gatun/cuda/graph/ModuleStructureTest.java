package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The graph module is built on runtime-core's public API alone: no main source file names
 * anything in {@code dev.gatun.cuda.internal}, so runtime-core needs no qualified export, no
 * bridge, and its internals can change without this module noticing.
 */
class ModuleStructureTest {

    private static final Path MAIN = Path.of("src", "main", "java");

    @Test
    void noMainSourceUsesRuntimeCoresInternals() throws IOException {
        List<Path> sources;
        try (Stream<Path> files = Files.walk(MAIN)) {
            sources = files.filter(p -> p.toString().endsWith(".java")).toList();
        }
        assertFalse(sources.isEmpty(), "no sources under " + MAIN.toAbsolutePath());
        List<String> offenders = sources.stream()
                .filter(p -> read(p).contains("dev.gatun.cuda.internal"))
                .map(p -> MAIN.relativize(p).toString())
                .toList();
        assertEquals(List.of(), offenders, "main sources of runtime-graph that reach into dev.gatun.cuda.internal");
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
