package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.CompiledProgram;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CacheDirectoryTest {

    private static final String KEY = "c".repeat(64);

    @TempDir
    Path temp;

    private List<String> fileNames(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aWrittenEntryReadsBackAndNoTemporaryFileRemains() throws IOException {
        CacheDirectory dir = new CacheDirectory(temp.resolve("made/on/demand"));
        assertEquals(Optional.empty(), dir.read(KEY).map(Arrays::toString));
        dir.write(KEY, new byte[] {1, 2, 3});
        assertArrayEquals(new byte[] {1, 2, 3}, dir.read(KEY).orElseThrow());
        assertEquals(List.of(KEY + ".entry"), fileNames(dir.root()));
    }

    @Test
    void whileAnEntryIsBeingWrittenReadersSeeOnlyThePreviousCompleteOne() throws IOException {
        List<Optional<byte[]>> seenDuringWrite = new ArrayList<>();
        List<Path> tempFiles = new ArrayList<>();
        CacheDirectory[] self = new CacheDirectory[1];
        self[0] = new CacheDirectory(temp, (file, bytes) -> {
            Files.write(file, Arrays.copyOf(bytes, bytes.length / 2));
            seenDuringWrite.add(self[0].read(KEY));
            Files.write(file, bytes);
            seenDuringWrite.add(self[0].read(KEY));
            tempFiles.add(file);
        });
        self[0].write(KEY, "first".getBytes(StandardCharsets.UTF_8));
        self[0].write(KEY, "second".getBytes(StandardCharsets.UTF_8));

        assertEquals(4, seenDuringWrite.size());
        assertTrue(seenDuringWrite.get(0).isEmpty() && seenDuringWrite.get(1).isEmpty(), "first write visible early");
        assertEquals("first", new String(seenDuringWrite.get(2).orElseThrow(), StandardCharsets.UTF_8));
        assertEquals("first", new String(seenDuringWrite.get(3).orElseThrow(), StandardCharsets.UTF_8));
        assertEquals("second", new String(self[0].read(KEY).orElseThrow(), StandardCharsets.UTF_8));
        for (Path file : tempFiles) {
            assertEquals(temp, file.getParent(), "temporary file outside the cache directory: " + file);
            assertFalse(Files.exists(file));
        }
    }

    @Test
    void aWriteThatFailsHalfwayLeavesThePreviousEntryAndNoTemporaryFile() throws IOException {
        new CacheDirectory(temp).write(KEY, "old".getBytes(StandardCharsets.UTF_8));
        CacheDirectory failing = new CacheDirectory(temp, (file, bytes) -> {
            Files.write(file, Arrays.copyOf(bytes, 2));
            throw new IOException("disk full");
        });
        IOException e = assertThrows(IOException.class, () -> failing.write(KEY, "new entry".getBytes()));
        assertEquals("disk full", e.getMessage());
        assertEquals("old", new String(failing.read(KEY).orElseThrow(), StandardCharsets.UTF_8));
        assertEquals(List.of(KEY + ".entry"), fileNames(temp));
    }

    @Test
    void aWriteThatFailsBeforeAnyEntryExistsLeavesNothing() throws IOException {
        CacheDirectory failing = new CacheDirectory(temp, (file, bytes) -> {
            throw new IllegalStateException("writer bug");
        });
        assertThrows(IllegalStateException.class, () -> failing.write(KEY, new byte[] {1}));
        assertEquals(List.of(), fileNames(temp));
    }

    /**
     * Writers of one key race each other and a reader. Every entry the reader sees must decode:
     * a partial file would fail its length or checksum check.
     */
    @Test
    void concurrentWritersOfOneKeyNeverExposeAPartialEntry() throws Exception {
        CacheDirectory dir = new CacheDirectory(temp);
        int writers = 3;
        int writesEach = 40;
        ExecutorService pool = Executors.newFixedThreadPool(writers + 1);
        try {
            CountDownLatch start = new CountDownLatch(1);
            AtomicBoolean writing = new AtomicBoolean(true);
            List<Future<?>> writes = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                byte[] image = new byte[64 * 1024 + w];
                Arrays.fill(image, (byte) (w + 1));
                byte[] entry = CacheEntryFormat.encode(KEY, new CompiledProgram("w" + w + ".cu",
                        CompileTarget.cubin(9, 0), image, "writer " + w, Map.of(), "13.0"));
                writes.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < writesEach; i++) {
                        dir.write(KEY, entry);
                    }
                    return null;
                }));
            }
            Future<Integer> reader = pool.submit(() -> {
                start.await();
                int seen = 0;
                while (writing.get()) {
                    Optional<byte[]> bytes = dir.read(KEY);
                    if (bytes.isPresent()) {
                        assertInstanceOf(CacheEntryFormat.Valid.class, CacheEntryFormat.decode(KEY, bytes.get()));
                        seen++;
                    }
                }
                return seen;
            });
            start.countDown();
            for (Future<?> write : writes) {
                write.get(60, TimeUnit.SECONDS);
            }
            writing.set(false);
            reader.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertInstanceOf(CacheEntryFormat.Valid.class, CacheEntryFormat.decode(KEY, dir.read(KEY).orElseThrow()));
        assertEquals(List.of(KEY + ".entry"), fileNames(temp));
    }
}
