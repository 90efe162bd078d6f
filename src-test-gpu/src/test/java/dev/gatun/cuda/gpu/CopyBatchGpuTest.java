package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CopyBatch;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.TransferState;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link CopyBatch} on the GPU: random host chunks uploaded in one batch into poisoned,
 * scattered device ranges, a kernel over the whole device buffer, and one batch of downloads
 * into poisoned pinned memory, all compared with the CPU's own computation; a batch of device
 * copies; the refusal inside a capture; the refusal of a batch whose copies overlap, and touching
 * ranges that still match the CPU. Each test prints which path the driver took.
 */
@RequiresGpu
class CopyBatchGpuTest {

    private static final byte POISON = (byte) 0xA5;
    /** Bytes left between two device ranges: still poisoned (plus one, from the kernel) if no copy strayed. */
    private static final int GAP = 64;

    private static final String INCREMENT = """
            extern "C" __global__ void increment(unsigned char* p, long long n) {
                long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x;
                if (i < n) p[i] = (unsigned char) (p[i] + 1);
            }
            """;

    /** On a driver for CUDA 13.0 or newer the batch is one driver call; older drivers copy one at a time. */
    private static boolean driverBatches() {
        return Cuda.system().driverVersion().encoded() >= 13000;
    }

    /**
     * {@code count} chunks (all {@code fixed} bytes, or random sizes of 1 to 8192 when 0) go up in
     * one batch, chunk i to the device slot {@code (i * 7) % count} (a permutation, with gaps); a
     * kernel adds 1 to every device byte; one batch brings the chunks back into a poisoned pinned
     * buffer. Every byte is compared with the CPU's: the chunks plus 1, the gaps poison plus 1.
     */
    @ParameterizedTest(name = "{0} copies of {1} bytes (0: random), {2}")
    @CsvSource({"64, 4096, BATCHED", "37, 0, BATCHED", "64, 4096, ONE_AT_A_TIME", "37, 0, ONE_AT_A_TIME"})
    void uploadsAKernelAndDownloadsMatchTheCpu(int count, int fixed, CopyBatch.Submission submission) {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        Layout l = Layout.random(random, count, fixed);
        int[] sizes = l.sizes();
        long[] hostOffsets = l.packed();
        long total = l.packedBytes();
        long[] deviceOffsets = l.scattered();
        long deviceBytes = l.scatteredBytes();
        byte[] data = new byte[(int) total];
        random.nextBytes(data);
        CudaContext ctx = Gpu.context();
        try (Kernel increment = Gpu.kernel(INCREMENT, "increment"); Stream stream = ctx.createStream();
                CopyBatch batch = CopyBatch.create(count, submission); PinnedBuffer up = ctx.allocatePinned(total);
                PinnedBuffer down = ctx.allocatePinned(total); DeviceBuffer device = ctx.allocate(deviceBytes)) {
            MemorySegment.copy(MemorySegment.ofArray(data), 0, up.segment(), 0, total);
            down.segment().fill(POISON);
            stream.memset(device.bytes(), POISON);
            for (int i = 0; i < count; i++) {
                batch.upload(device.bytes().slice(deviceOffsets[i], sizes[i]), up, hostOffsets[i]);
            }
            batch.submit(stream);
            increment.prepare(LaunchConfig.covering(deviceBytes, 256), KernelArg.pointer(device), KernelArg.i64(deviceBytes))
                    .launch(stream);
            for (int i = 0; i < count; i++) {
                batch.download(down, hostOffsets[i], device.bytes().slice(deviceOffsets[i], sizes[i]));
            }
            batch.submit(stream);
            byte[] expected = data.clone();
            for (int k = 0; k < expected.length; k++) {
                expected[k]++;
            }
            assertArrayEquals(expected, down.segment().toArray(ValueLayout.JAVA_BYTE),
                    "the chunks came back, each plus 1 (seed=" + seed + ")");
            byte[] onDevice = new byte[(int) deviceBytes];
            device.bytes().copyTo(onDevice); // an independent path: synchronous, through staging
            for (int i = 0; i < count; i++) {
                for (int k = 0; k < sizes[i]; k++) {
                    assertEquals(expected[(int) hostOffsets[i] + k], onDevice[(int) deviceOffsets[i] + k],
                            "chunk " + i + " byte " + k + " on the device (seed=" + seed + ")");
                }
                for (int g = 0; g < GAP; g++) {
                    assertEquals((byte) (POISON + 1), onDevice[(int) deviceOffsets[i] + sizes[i] + g],
                            "the gap after chunk " + i + " was written by no copy (seed=" + seed + ")");
                }
            }
            boolean batched = submission == CopyBatch.Submission.BATCHED && driverBatches();
            assertEquals(batched ? 2 : 0, batch.batchedSubmissions());
            assertEquals(batched ? 0 : 2, batch.oneAtATimeSubmissions());
            System.out.printf("CopyBatchGpuTest: %d uploads + %d downloads, %d bytes each way, driver %s: "
                    + "%d batched submissions, %d one at a time%n", count, count, total, Cuda.system().driverVersion(),
                    batch.batchedSubmissions(), batch.oneAtATimeSubmissions());
        }
    }

    /**
     * Chunks of {@code sizes}: packed one after another ({@code packed}), and scattered, chunk i
     * in slot (i * 7) % count with the slots in order, each followed by a poisoned gap of
     * {@link #GAP} bytes ({@code scattered}).
     */
    private record Layout(int[] sizes, long[] packed, long packedBytes, long[] scattered, long scatteredBytes) {
        /** {@code count} chunks of {@code fixed} bytes, or of 1 to 8192 random bytes when {@code fixed} is 0. */
        static Layout random(Random random, int count, int fixed) {
            int[] sizes = new int[count];
            long[] packed = new long[count];
            long packedBytes = 0;
            for (int i = 0; i < count; i++) {
                sizes[i] = fixed > 0 ? fixed : 1 + random.nextInt(8192);
                packed[i] = packedBytes;
                packedBytes += sizes[i];
            }
            long[] scattered = slotted(sizes, GAP);
            return new Layout(sizes, packed, packedBytes, scattered, scattered[count]);
        }

        /**
         * Where each chunk lies when chunk i is in slot (i * 7) % count and the slots follow one
         * another, {@code gap} bytes apart; the last element is where the slots end.
         */
        static long[] slotted(int[] sizes, int gap) {
            int count = sizes.length;
            long[] at = new long[count + 1];
            long end = 0;
            for (int slot = 0; slot < count; slot++) {
                int chunk = chunkInSlot(slot, count);
                at[chunk] = end;
                end += sizes[chunk] + gap;
            }
            at[count] = end;
            return at;
        }
    }

    /** The chunk that device slot {@code slot} holds: the inverse of chunk i to slot (i * 7) % count. */
    private static int chunkInSlot(int slot, int count) {
        for (int i = 0; i < count; i++) {
            if ((i * 7) % count == slot) {
                return i;
            }
        }
        throw new IllegalArgumentException("7 must be coprime with the count " + count);
    }

    /** 37 device-to-device copies of random sizes into a poisoned buffer, in a permuted order, against the CPU. */
    @Test
    void deviceCopiesMatchTheCpu() {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int count = 37;
        Layout l = Layout.random(random, count, 0);
        int[] sizes = l.sizes();
        long[] from = l.packed();
        long total = l.packedBytes();
        long[] to = l.scattered();
        long toBytes = l.scatteredBytes();
        byte[] data = new byte[(int) total];
        random.nextBytes(data);
        CudaContext ctx = Gpu.context();
        try (Stream stream = ctx.createStream(); CopyBatch batch = CopyBatch.create(count);
                DeviceBuffer source = ctx.allocate(total); DeviceBuffer target = ctx.allocate(toBytes)) {
            source.bytes().copyFrom(data);
            stream.memset(target.bytes(), POISON);
            for (int i = 0; i < count; i++) {
                batch.copy(target.bytes().slice(to[i], sizes[i]), source.bytes().slice(from[i], sizes[i]));
            }
            batch.submit(stream);
            byte[] back = new byte[(int) toBytes];
            target.bytes().copyTo(back); // a synchronous copy: ordered after the batch
            for (int i = 0; i < count; i++) {
                for (int k = 0; k < sizes[i]; k++) {
                    assertEquals(data[(int) from[i] + k], back[(int) to[i] + k], "chunk " + i + " (seed=" + seed + ")");
                }
                for (int g = 0; g < GAP; g++) {
                    assertEquals(POISON, back[(int) to[i] + sizes[i] + g], "gap after chunk " + i + " (seed=" + seed + ")");
                }
            }
            assertEquals(driverBatches() ? 1 : 0, batch.batchedSubmissions());
            System.out.printf("CopyBatchGpuTest: %d device copies, %d bytes, %s%n", count, total,
                    batch.batchedSubmissions() == 1 ? "one cuMemcpyBatchAsync" : "one cuMemcpyAsync each");
        }
    }

    /**
     * Issue 34: 64 chunks of random sizes uploaded in one batch into device ranges that touch
     * (each ends where the next begins), in a permuted order, plus one more upload into a byte
     * one of them writes: the batch is refused before any driver call (the poisoned device buffer
     * stays poisoned, the pinned source was never fenced), keeps its copies, and once cleared and
     * filled without the extra copy it runs, and a batch of downloads into poisoned pinned memory
     * brings back exactly what the CPU sent.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"BATCHED", "ONE_AT_A_TIME"})
    void anOverlappingBatchIsRefusedAndTouchingRangesStillMatchTheCpu(CopyBatch.Submission submission) {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int count = 64;
        Layout l = Layout.random(random, count, 0);
        int[] sizes = l.sizes();
        long[] packed = l.packed();
        long total = l.packedBytes();
        long[] touching = Layout.slotted(sizes, 0); // the slots back to back, no gap
        byte[] data = new byte[(int) total];
        random.nextBytes(data);
        CudaContext ctx = Gpu.context();
        try (Stream stream = ctx.createStream(); CopyBatch batch = CopyBatch.create(count + 1, submission);
                PinnedBuffer up = ctx.allocatePinned(total); PinnedBuffer down = ctx.allocatePinned(total);
                DeviceBuffer device = ctx.allocate(total)) {
            MemorySegment.copy(MemorySegment.ofArray(data), 0, up.segment(), 0, total);
            down.segment().fill(POISON);
            stream.memset(device.bytes(), POISON);
            for (int i = 0; i < count; i++) {
                batch.upload(device.bytes().slice(touching[i], sizes[i]), up, packed[i]);
            }
            int victim = random.nextInt(count);
            long stray = touching[victim] + random.nextInt(sizes[victim]); // a byte chunk `victim` writes
            batch.upload(device.bytes().slice(stray, 1), up, 0);
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> batch.submit(stream));
            assertTrue(refused.getMessage().contains("overlap on device bytes [0x"
                    + Long.toHexString(device.address() + stray) + ", 0x" + Long.toHexString(device.address() + stray + 1)
                    + ")"), refused.getMessage());
            assertEquals(count + 1, batch.size(), "the refused batch keeps its copies");
            assertEquals(TransferState.COMPLETE, up.transferState(), "nothing was queued through the pinned buffer");
            byte[] untouched = new byte[(int) total];
            device.bytes().copyTo(untouched);
            for (int k = 0; k < untouched.length; k++) {
                assertEquals(POISON, untouched[k], "device byte " + k + " after the refused batch (seed=" + seed + ")");
            }
            batch.clear();
            for (int i = 0; i < count; i++) {
                batch.upload(device.bytes().slice(touching[i], sizes[i]), up, packed[i]);
            }
            batch.submit(stream);
            for (int i = 0; i < count; i++) {
                batch.download(down, packed[i], device.bytes().slice(touching[i], sizes[i]));
            }
            batch.submit(stream);
            assertArrayEquals(data, down.segment().toArray(ValueLayout.JAVA_BYTE),
                    "64 touching chunks went up and came back (seed=" + seed + ")");
            System.out.printf("COPYBATCH-OVERLAP %s: an upload into byte %d of chunk %d's range refused before the driver, "
                    + "%d touching chunks (%d bytes) match the CPU, %d batched and %d one-at-a-time submissions%n",
                    submission, stray - touching[victim], victim, count, total, batch.batchedSubmissions(),
                    batch.oneAtATimeSubmissions());
        }
    }

    /** A batch submitted on a capturing stream is refused before the driver sees it; after the capture it runs. */
    @Test
    void aBatchIsRefusedInsideACapture() {
        CudaContext ctx = Gpu.context();
        byte[] data = new byte[4096];
        Gpu.random(Gpu.seed()).nextBytes(data);
        try (Stream stream = ctx.createStream(); CopyBatch batch = CopyBatch.create(1);
                PinnedBuffer pinned = ctx.allocatePinned(4096); DeviceBuffer device = ctx.allocate(4096)) {
            MemorySegment.copy(MemorySegment.ofArray(data), 0, pinned.segment(), 0, data.length);
            stream.memset(device.bytes(), POISON);
            batch.upload(device.bytes(), pinned, 0);
            StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL);
            CaptureActiveException refused = assertThrows(CaptureActiveException.class, () -> batch.submit(stream));
            assertTrue(refused.getMessage().contains("no graph node for a batch of copies"), refused.getMessage());
            assertEquals(1, batch.size(), "the refused batch keeps its copy");
            assertEquals(TransferState.COMPLETE, pinned.transferState(), "nothing was queued through the pinned buffer");
            capture.abort();
            batch.submit(stream);
            byte[] back = new byte[4096];
            device.bytes().copyTo(back);
            assertArrayEquals(data, back, "the batch submitted after the capture ran");
            System.out.println("CopyBatchGpuTest: refused inside a capture: " + refused.getMessage());
        }
    }
}
