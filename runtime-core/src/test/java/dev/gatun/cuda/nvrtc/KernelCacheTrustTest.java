package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeNvrtcApi;
import dev.gatun.cuda.testing.LogCapture;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.Level;

/**
 * What the kernel cache trusts (review 2026-12-03, finding 8): entries are run as GPU code, so a
 * directory someone else can write, a symbolic link on the way, or an entry that is not a plain
 * file of a sane size must never reach the loader, and must never hang or fail a compile. Each
 * test plants a valid entry where the defect would load it, so that it fails by a hit, not by a
 * missing message. POSIX only (chmod, symbolic links, mkfifo), as Gatun's platforms are.
 */
class KernelCacheTrustTest {

    private static final String SOURCE = NvrtcCompilerTest.SOURCE;
    private static final CompileOptions OPTIONS = CompileOptions.of(CompileTarget.cubin(9, 0));

    @TempDir
    Path temp;

    private final FakeNvrtcApi fake = new FakeNvrtcApi();

    private NvrtcCompiler compiler(KernelCache cache) {
        return NvrtcLibrary.create(fake, "fake").compiler(cache, NvrtcCompilerTest.TOOLKIT);
    }

    /** Compiles once into {@code dir} (a trusted, private cache), leaving one valid entry there; returns it. */
    private Path plantedEntry(Path dir) throws IOException {
        compiler(KernelCache.at(dir)).compile(SOURCE, OPTIONS);
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.toString().endsWith(".entry")).findFirst().orElseThrow();
        }
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }

    @Test
    void theDirectoryIsCreatedReadableAndWritableByTheUserOnly() throws IOException {
        Path dir = temp.resolve("cache").resolve("kernels");
        compiler(KernelCache.at(dir)).compile(SOURCE, OPTIONS);
        assertEquals("rwx------", mode(dir));
        assertEquals("rwx------", mode(dir.getParent()), "and the directories made above it");
        try (Stream<Path> files = Files.list(dir)) {
            for (Path entry : files.toList()) {
                assertEquals("rw-------", mode(entry), entry.toString());
            }
        }
    }

    @Test
    void aDirectoryOthersCanWriteIsRefusedOnceAndCompilesGoOnWithoutIt() throws IOException {
        Path dir = temp.resolve("shared");
        plantedEntry(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        KernelCache cache = KernelCache.at(dir);
        NvrtcCompiler compiler = compiler(cache);
        LogCapture.clear();
        compiler.compile(SOURCE, OPTIONS);
        compiler.compile(SOURCE, OPTIONS);
        assertEquals(3, fake.compiles(), "an entry in a directory others can write is never loaded");
        LogCapture.expect(Level.WARN, KernelCache.class, "not using the kernel cache directory " + dir,
                "writable by its group or others", "compiling without the cache");
        assertEquals(1, LogCapture.find(Level.WARN, KernelCache.class, "not using").size(), "said once");
        assertEquals(2, cache.counters().refusedLookups());
        assertEquals(0, cache.counters().stores(), "nor written to");
        assertTrue(cache.refusal().orElseThrow().contains("writable by its group or others"));
    }

    @Test
    void aSymbolicLinkOnThePathIsRefusedAndTheRealPathIsNamed() throws IOException {
        Path real = temp.resolve("real");
        plantedEntry(real.resolve("kernels"));
        Path link = Files.createSymbolicLink(temp.resolve("link"), real);
        KernelCache cache = KernelCache.at(link.resolve("kernels"));
        LogCapture.clear();
        compiler(cache).compile(SOURCE, OPTIONS);
        assertEquals(2, fake.compiles(), "not loaded through a symbolic link");
        LogCapture.expect(Level.WARN, KernelCache.class, "its path component " + link + " is a symbolic link",
                "name the real directory (" + real.toRealPath().resolve("kernels") + ")");
        assertEquals(1, cache.counters().refusedLookups());
    }

    @Test
    void anEntryThatIsASymbolicLinkIsNotFollowed() throws IOException {
        Path elsewhere = plantedEntry(temp.resolve("elsewhere"));
        Path dir = Files.createDirectory(temp.resolve("kernels"));
        Path entry = Files.createSymbolicLink(dir.resolve(elsewhere.getFileName()), elsewhere);
        KernelCache cache = KernelCache.at(dir);
        LogCapture.clear();
        compiler(cache).compile(SOURCE, OPTIONS);
        assertEquals(2, fake.compiles(), "the link's target was not loaded");
        LogCapture.expect(Level.WARN, KernelCache.class, "ignoring kernel cache entry " + entry, "a symbolic link");
        assertEquals(1, cache.counters().rejectedEntries());
        assertFalse(Files.isSymbolicLink(entry), "the fresh result replaced the link");
    }

    @Test
    void aFifoEntryIsNeverOpenedSoItNeitherHangsNorFeedsTheCompile() throws Exception {
        byte[] valid = Files.readAllBytes(plantedEntry(temp.resolve("source")));
        Path dir = Files.createDirectory(temp.resolve("kernels"));
        String name;
        try (Stream<Path> files = Files.list(temp.resolve("source"))) {
            name = files.toList().getFirst().getFileName().toString();
        }
        Path fifo = dir.resolve(name);
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor(), "mkfifo");
        // The compile's fresh entry is renamed over the FIFO's name: the test reaches the FIFO
        // through a second name of its own.
        Path alias = Files.createLink(temp.resolve("fifo"), fifo);
        // A writer that feeds a valid entry to whoever opens the FIFO: a reader that opens it would
        // load that entry (a hit) instead of hanging, so the defect shows as a failed assertion.
        CountDownLatch opened = new CountDownLatch(1);
        Thread writer = Thread.ofPlatform().daemon().start(() -> {
            try (OutputStream out = Files.newOutputStream(alias)) {
                opened.countDown();
                out.write(valid);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        KernelCache cache = KernelCache.at(dir);
        LogCapture.clear();
        compiler(cache).compile(SOURCE, OPTIONS);
        boolean readerOpenedIt = opened.getCount() == 0; // the writer's open returns only once a reader opened
        if (!readerOpenedIt) {
            try (InputStream in = Files.newInputStream(alias)) { // let the writer finish
                in.readAllBytes();
            }
        }
        writer.join();
        assertFalse(readerOpenedIt, "the cache opened a FIFO");
        assertEquals(2, fake.compiles(), "compiled, not fed by the FIFO");
        LogCapture.expect(Level.WARN, KernelCache.class, "ignoring kernel cache entry " + fifo, "not a regular file");
        assertEquals(1, cache.counters().rejectedEntries());
    }

    @Test
    void anEntryLargerThanTheCapIsRefusedWithoutReadingIt() throws IOException {
        Path entry = plantedEntry(temp.resolve("kernels"));
        try (RandomAccessFile huge = new RandomAccessFile(entry.toFile(), "rw")) {
            huge.setLength(3L << 30); // sparse: no disk, but more than any Java array
        }
        KernelCache cache = KernelCache.at(entry.getParent());
        LogCapture.clear();
        compiler(cache).compile(SOURCE, OPTIONS); // must not throw OutOfMemoryError
        assertEquals(2, fake.compiles());
        LogCapture.expect(Level.WARN, KernelCache.class, "ignoring kernel cache entry " + entry,
                (3L << 30) + " bytes, more than the cap of " + (256 << 20));
        assertEquals(1, cache.counters().rejectedEntries());
        assertTrue(Files.size(entry) < 1 << 20, "the fresh result replaced it");

        KernelCache tight = KernelCache.at(entry.getParent()).withMaxEntryBytes(Files.size(entry) - 1);
        compiler(tight).compile(SOURCE, OPTIONS);
        assertEquals(3, fake.compiles(), "a configured cap applies too");
        assertEquals(1, tight.counters().rejectedEntries());
    }

    @Test
    void theAuthenticatedModeLoadsOnlyEntriesWithTheUsersMac() throws IOException {
        Path dir = temp.resolve("shared");
        plantedEntry(dir); // a valid entry without a MAC, as anyone could write it
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx")); // others may write here
        Path key = temp.resolve("private").resolve("kernel-cache.key");
        KernelCache cache = KernelCache.authenticatedAt(dir, key);
        NvrtcCompiler compiler = compiler(cache);
        LogCapture.clear();
        compiler.compile(SOURCE, OPTIONS);
        assertEquals(2, fake.compiles(), "an entry without a MAC is not loaded");
        LogCapture.expect(Level.WARN, KernelCache.class, "it has no MAC");
        assertEquals(1, cache.counters().unauthenticatedEntries());
        assertEquals("rw-------", mode(key), "the key is made private");
        assertEquals("rwx------", mode(key.getParent()));
        assertEquals(32, Files.size(key));

        compiler.compile(SOURCE, OPTIONS);
        assertEquals(2, fake.compiles(), "the entry it wrote, with its MAC, hits");
        assertEquals(1, cache.counters().hits());

        // Another user's key (or a forger's) makes entries this user does not load.
        KernelCache other = KernelCache.authenticatedAt(dir, temp.resolve("other").resolve("kernel-cache.key"));
        compiler(other).compile(SOURCE, OPTIONS);
        assertEquals(3, fake.compiles());
        assertEquals(1, other.counters().unauthenticatedEntries());
        compiler.compile(SOURCE, OPTIONS);
        assertEquals(4, fake.compiles(), "the other key's entry does not verify under this one");
        LogCapture.expect(Level.WARN, KernelCache.class, "its MAC does not verify under this user's key");
        assertEquals(2, cache.counters().unauthenticatedEntries());
    }

    @Test
    void aKeyFileOthersCanReadIsRefusedAndTheCacheIsNotUsed() throws IOException {
        Path key = temp.resolve("keys").resolve("kernel-cache.key");
        Files.createDirectories(key.getParent());
        Files.write(key, new byte[32]);
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
        KernelCache cache = KernelCache.authenticatedAt(temp.resolve("kernels"), key);
        LogCapture.clear();
        compiler(cache).compile(SOURCE, OPTIONS);
        compiler(cache).compile(SOURCE, OPTIONS);
        assertEquals(2, fake.compiles());
        LogCapture.expect(Level.WARN, KernelCache.class, "its authentication key cannot be used",
                "can be read or written by others (rw-r--r--)");
        assertEquals(List.of(), List.of(cache.counters().stores(), cache.counters().hits()).stream()
                .filter(n -> n != 0).toList(), "neither written nor read");
    }
}
