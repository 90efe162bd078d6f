package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.nvrtc.CacheEntryFormat;
import dev.gatun.cuda.testing.FakeNvrtcApi;
import dev.gatun.cuda.testing.LogCapture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.Level;

/** The compiler with a {@link KernelCache}: hits never reach NVRTC, misses fill the cache. */
class NvrtcCompilerCacheTest {

    private static final String SOURCE = NvrtcCompilerTest.SOURCE;

    @TempDir
    Path temp;

    private final FakeNvrtcApi fake = new FakeNvrtcApi();

    private NvrtcCompiler compiler(FakeNvrtcApi api, KernelCache cache) {
        return NvrtcLibrary.create(api, "fake").compiler(cache, NvrtcCompilerTest.TOOLKIT);
    }

    private static CompileOptions templated() {
        return CompileOptions.builder(CompileTarget.cubin(9, 0)).programName("scale.cu").options("-std=c++17")
                .nameExpression("&scale<float>").build();
    }

    private List<Path> files() throws IOException {
        try (Stream<Path> files = Files.list(temp)) {
            return files.sorted().toList();
        }
    }

    @Test
    void aHitRestoresExactlyTheFreshResultWithoutCallingNvrtc() throws IOException {
        fake.warningLog("scale.cu(1): warning: something\n");
        NvrtcCompiler compiler = compiler(fake, KernelCache.at(temp));
        CompiledProgram fresh = compiler.compile(SOURCE, templated());
        int callsAfterMiss = fake.calls();

        CompiledProgram cached = compiler.compile(SOURCE, templated());
        assertEquals(callsAfterMiss, fake.calls(), "a hit must not call NVRTC at all");
        assertEquals(fresh, cached);
        assertEquals(fresh.log(), cached.log());
        assertEquals(fresh.loweredNames(), cached.loweredNames());
        assertEquals(fresh.sha256(), cached.sha256());
        assertEquals(1, fake.compiles());
        assertEquals(1, files().size());
        assertTrue(files().getFirst().getFileName().toString().endsWith(".entry"), files().toString());
    }

    @Test
    void anotherProcessWithTheSameCacheDirectoryHitsToo() {
        compiler(fake, KernelCache.at(temp)).compile(SOURCE, templated());
        FakeNvrtcApi second = new FakeNvrtcApi();
        compiler(second, KernelCache.at(temp)).compile(SOURCE, templated());
        assertEquals(0, second.compiles());
    }

    @Test
    void anyDifferentInputIsAMiss() {
        NvrtcCompiler compiler = compiler(fake, KernelCache.at(temp));
        compiler.compile(SOURCE, templated());
        compiler.compile(SOURCE + "// changed\n", templated());
        compiler.compile(SOURCE, CompileOptions.builder(CompileTarget.cubin(9, 0)).programName("scale.cu")
                .options("-std=c++20").nameExpression("&scale<float>").build());
        compiler.compile(SOURCE, CompileOptions.of(CompileTarget.ptx(9, 0)));
        compiler.compile(SOURCE, CompileOptions.of(CompileTarget.ptx(8, 0)));
        assertEquals(5, fake.compiles());
    }

    @Test
    void anotherNvrtcVersionIsAMiss() {
        compiler(fake, KernelCache.at(temp)).compile(SOURCE, templated());
        FakeNvrtcApi newer = new FakeNvrtcApi(13, 1);
        CompiledProgram program = compiler(newer, KernelCache.at(temp)).compile(SOURCE, templated());
        assertEquals(1, newer.compiles());
        assertEquals("13.1", program.nvrtcVersion());
    }

    @Test
    void otherToolkitHeadersAreAMiss() {
        compiler(fake, KernelCache.at(temp)).compile(SOURCE, templated());
        NvrtcLibrary.create(fake, "fake").compiler(KernelCache.at(temp), List.of(Path.of("/opt/cuda-13.1/include")))
                .compile(SOURCE, templated());
        assertEquals(2, fake.compiles());
    }

    @Test
    void aDisabledCacheCompilesEveryTimeAndWritesNothing() throws IOException {
        NvrtcCompiler compiler = compiler(fake, KernelCache.disabled());
        compiler.compile(SOURCE, templated());
        compiler.compile(SOURCE, templated());
        assertEquals(2, fake.compiles());
        assertEquals(List.of(), files());
    }

    @Test
    void failuresAreNotCached() throws IOException {
        NvrtcCompiler compiler = compiler(fake, KernelCache.at(temp));
        assertThrows(CompilationException.class, () -> compiler.compile("#error no\n", templated()));
        assertThrows(CompilationException.class, () -> compiler.compile("#error no\n", templated()));
        assertEquals(2, fake.compiles());
        assertEquals(List.of(), files());
    }

    @Test
    void aCorruptEntryIsIgnoredAndRewrittenByTheNextCompile() throws IOException {
        NvrtcCompiler compiler = compiler(fake, KernelCache.at(temp));
        CompiledProgram fresh = compiler.compile(SOURCE, templated());
        Path entry = files().getFirst();
        byte[] good = Files.readAllBytes(entry);
        byte[] corrupt = good.clone();
        corrupt[corrupt.length - 1] ^= 1;
        Files.write(entry, corrupt);

        LogCapture.clear();
        assertEquals(fresh, compiler.compile(SOURCE, templated()));
        LogCapture.expect(Level.WARN, KernelCache.class, "ignoring kernel cache entry " + entry + ": ");
        assertEquals(2, fake.compiles(), "the corrupt entry must not be used");
        assertEquals(Arrays.toString(good), Arrays.toString(Files.readAllBytes(entry)), "not rewritten");
        compiler.compile(SOURCE, templated());
        assertEquals(2, fake.compiles(), "the rewritten entry must hit");
    }

    @Test
    void aTruncatedEntryIsIgnoredAndRewritten() throws IOException {
        NvrtcCompiler compiler = compiler(fake, KernelCache.at(temp));
        compiler.compile(SOURCE, templated());
        Path entry = files().getFirst();
        Files.write(entry, Arrays.copyOf(Files.readAllBytes(entry), 40));

        LogCapture.clear();
        compiler.compile(SOURCE, templated());
        assertEquals(2, fake.compiles());
        LogCapture.expect(Level.WARN, KernelCache.class, "ignoring kernel cache entry " + entry + ": ");
        String key = entry.getFileName().toString().replace(".entry", "");
        assertInstanceOf(CacheEntryFormat.Valid.class, CacheEntryFormat.decode(key, Files.readAllBytes(entry)));
    }

    @Test
    void headersThatCannotBeReadCompileWithoutTheCache() throws IOException {
        Path headers = Files.createDirectories(temp.resolve("headers").resolve("sub"));
        Files.createSymbolicLink(headers.resolve("loop"), headers.getParent());
        Path cacheDir = temp.resolve("kernels");
        KernelCache cache = KernelCache.at(cacheDir);
        CompileOptions options = CompileOptions.builder(CompileTarget.ptx(9, 0)).includeDirectory(headers.getParent())
                .build();
        LogCapture.clear();
        compiler(fake, cache).compile(SOURCE, options);
        LogCapture.expect(Level.WARN, NvrtcCompiler.class, "cannot read the headers under the include directories ["
                + headers.getParent() + "] of kernel.cu", "compiling without the cache");
        assertEquals(1, fake.compiles());
        assertEquals(new KernelCacheCounters(0, 0, 0, 0, 0, 0, 0), cache.counters());
        assertTrue(Files.notExists(cacheDir), "nothing written");
    }

    @Test
    void anUnwritableCacheNeverFailsTheCompile() throws IOException {
        Path notADirectory = Files.writeString(temp.resolve("file"), "in the way");
        KernelCache cache = KernelCache.at(notADirectory);
        NvrtcCompiler compiler = compiler(fake, cache);
        LogCapture.clear();
        CompiledProgram first = compiler.compile(SOURCE, templated());
        assertEquals(first, compiler.compile(SOURCE, templated()));
        assertEquals(2, fake.compiles());
        LogCapture.expect(Level.WARN, KernelCache.class, "not using the kernel cache directory " + notADirectory,
                "is not a directory");
        assertEquals(2, cache.counters().refusedLookups());

        Path underAFile = notADirectory.resolve("kernels"); // cannot be created
        NvrtcCompiler uncreatable = compiler(fake, KernelCache.at(underAFile));
        assertEquals(first, uncreatable.compile(SOURCE, templated()));
        LogCapture.expect(Level.WARN, KernelCache.class, "cannot write kernel cache entry " + underAFile);
    }
}
