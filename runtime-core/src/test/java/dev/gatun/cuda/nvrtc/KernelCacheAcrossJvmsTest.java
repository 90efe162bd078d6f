package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.gatun.cuda.ChildJvm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 25: each JVM unpacks its headers into a new temporary directory, and the kernel cache
 * must still hit in the second JVM; a header with other content must still miss.
 */
class KernelCacheAcrossJvmsTest {

    @TempDir
    Path temp;

    private List<String> child(String header) throws IOException, InterruptedException {
        List<String> lines = ChildJvm.run(KernelCacheChild.class, Map.of(),
                List.of("-D" + KernelCache.DIRECTORY_PROPERTY + "=" + temp.resolve("kernels")), header);
        return List.of(only(lines, "child headers="), only(lines, "child hits="));
    }

    private static String only(List<String> lines, String prefix) {
        List<String> found = ChildJvm.withPrefix(lines, prefix);
        assertEquals(1, found.size(), String.join("\n", lines));
        return found.getFirst();
    }

    private List<String> entries() throws IOException {
        try (Stream<Path> files = Files.list(temp.resolve("kernels"))) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void theSecondJvmHitsThoughItsHeadersAreInAnotherTemporaryDirectory() throws Exception {
        List<String> first = child("#define VALUE 1.0f\n");
        assertEquals("child hits=0 misses=1 stores=1 compiles=1", first.get(1));
        List<String> written = entries();
        assertEquals(1, written.size(), written.toString());

        List<String> second = child("#define VALUE 1.0f\n");
        assertNotEquals(first.get(0), second.get(0), "each JVM has a header directory of its own");
        assertEquals("child hits=1 misses=0 stores=0 compiles=0", second.get(1));
        assertEquals(written, entries(), "the hit wrote no entry");

        List<String> changed = child("#define VALUE 2.0f\n");
        assertEquals("child hits=0 misses=1 stores=1 compiles=1", changed.get(1), "another header is another key");
        assertEquals(2, entries().size());
    }
}
