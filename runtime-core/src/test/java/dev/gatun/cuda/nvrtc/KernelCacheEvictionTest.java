package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeNvrtcApi;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cache stays under its cap by evicting the least recently used entries after a write. */
class KernelCacheEvictionTest {

    @TempDir
    Path temp;

    private final FakeNvrtcApi fake = new FakeNvrtcApi();

    private static String source(int n) {
        return "extern \"C\" __global__ void k" + n + "(float *o) { o[0] = 1.0f; }\n"; // same length for n < 10
    }

    private static final CompileOptions OPTIONS = CompileOptions.of(CompileTarget.ptx(9, 0));

    private List<Path> entries() throws IOException {
        try (Stream<Path> files = Files.list(temp)) {
            return files.sorted().toList();
        }
    }

    /** Compiles source(n) and returns the entry it wrote. */
    private Path compileNew(NvrtcCompiler compiler, int n) throws IOException {
        List<Path> before = entries();
        compiler.compile(source(n), OPTIONS);
        List<Path> after = new ArrayList<>(entries());
        after.removeAll(before);
        assertEquals(1, after.size(), after.toString());
        return after.getFirst();
    }

    @Test
    void aWriteOverTheCapEvictsTheLeastRecentlyUsedEntryAndCountsIt() throws IOException {
        NvrtcCompiler filling = NvrtcLibrary.create(fake, "fake").compiler(KernelCache.at(temp), NvrtcCompilerTest.TOOLKIT);
        Path first = compileNew(filling, 1);
        Path second = compileNew(filling, 2);
        Path third = compileNew(filling, 3);
        long size = Files.size(first);
        assertEquals(size, Files.size(second));
        assertEquals(size, Files.size(third));
        // Uses set explicitly, in 2020, so no clock is raced: first is the least recently used.
        Files.setLastModifiedTime(first, FileTime.from(Instant.parse("2020-01-01T00:00:00Z")));
        Files.setLastModifiedTime(second, FileTime.from(Instant.parse("2020-01-02T00:00:00Z")));
        Files.setLastModifiedTime(third, FileTime.from(Instant.parse("2020-01-03T00:00:00Z")));

        KernelCache capped = KernelCache.at(temp).withMaxBytes(3 * size);
        NvrtcCompiler compiler = NvrtcLibrary.create(fake, "fake").compiler(capped, NvrtcCompilerTest.TOOLKIT);
        compiler.compile(source(1), OPTIONS); // a hit: first becomes the most recently used
        assertEquals(1, capped.counters().hits());
        Path fourth = compileNew(compiler, 4);

        assertEquals(List.of(first, third, fourth).stream().sorted().toList(), entries(), "second was evicted");
        KernelCacheCounters counters = capped.counters();
        assertEquals(1, counters.evictions());
        assertEquals(1, counters.stores());
    }

    @Test
    void anEntryOverTheCapAloneIsKeptAndEverythingElseGoes() throws IOException {
        NvrtcCompiler filling = NvrtcLibrary.create(fake, "fake").compiler(KernelCache.at(temp), NvrtcCompilerTest.TOOLKIT);
        compileNew(filling, 1);
        compileNew(filling, 2);
        KernelCache tiny = KernelCache.at(temp).withMaxBytes(1);
        Path kept = compileNew(NvrtcLibrary.create(fake, "fake").compiler(tiny, NvrtcCompilerTest.TOOLKIT), 3);
        assertEquals(List.of(kept), entries());
        assertEquals(2, tiny.counters().evictions());
    }

    @Test
    void aCapBelowOneByteIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KernelCache.at(temp).withMaxBytes(0));
        assertTrue(e.getMessage().contains("KernelCache.disabled()"), e.getMessage());
    }
}
