package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link CopyBatch} on the simulated driver: both paths, the checks before the driver, fences, refusal in a capture. */
class CopyBatchTest {

    private static final String BATCH = "cuMemcpyBatchAsync_v2";
    private static final byte POISON = (byte) 0xA5;

    /** Random sizes of {@code count} copies, 1 to 4096 bytes, and their offsets packed one after another. */
    private record Layout(int[] sizes, long[] offsets, long total) {
        static Layout random(Random random, int count) {
            int[] sizes = new int[count];
            long[] offsets = new long[count];
            long total = 0;
            for (int i = 0; i < count; i++) {
                sizes[i] = 1 + random.nextInt(4096);
                offsets[i] = total;
                total += sizes[i];
            }
            return new Layout(sizes, offsets, total);
        }
    }

    /**
     * Uploads {@code count} random host chunks into a poisoned device buffer in reverse order
     * (chunk i lands where chunk count-1-i would), downloads them back into a poisoned pinned
     * buffer with a batch, and checks every byte against the host's own permutation.
     */
    private static void roundTrip(Simulated sim, CopyBatch.Submission submission, int count, long seed) {
        CudaContext ctx = sim.context();
        Stream stream = ctx.createStream();
        Random random = new Random(seed);
        Layout l = Layout.random(random, count);
        byte[] data = new byte[(int) l.total()];
        random.nextBytes(data);
        try (CopyBatch batch = CopyBatch.create(count, submission); PinnedBuffer up = ctx.allocatePinned(l.total());
                PinnedBuffer down = ctx.allocatePinned(l.total()); DeviceBuffer device = ctx.allocate(l.total())) {
            MemorySegment.copy(MemorySegment.ofArray(data), 0, up.segment(), 0, data.length);
            down.segment().fill(POISON);
            stream.memset(device.bytes(), POISON);
            long[] deviceOffsets = new long[count];
            long at = 0;
            for (int i = count - 1; i >= 0; i--) { // the device holds the chunks in reverse order
                deviceOffsets[i] = at;
                at += l.sizes()[i];
            }
            for (int i = 0; i < count; i++) {
                batch.upload(device.bytes().slice(deviceOffsets[i], l.sizes()[i]), up, l.offsets()[i]);
            }
            assertEquals(count, batch.size());
            batch.submit(stream);
            assertEquals(0, batch.size(), "a submitted batch is empty");
            for (int i = 0; i < count; i++) {
                batch.download(down, l.offsets()[i], device.bytes().slice(deviceOffsets[i], l.sizes()[i]));
            }
            batch.submit(stream);
            byte[] back = down.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE); // waits for the batch
            assertArrayEquals(data, back, "every chunk went up and came back to its own place");
            byte[] onDevice = new byte[data.length];
            device.bytes().copyTo(onDevice);
            for (int i = 0; i < count; i++) {
                for (int k = 0; k < l.sizes()[i]; k++) {
                    assertEquals(data[(int) l.offsets()[i] + k], onDevice[(int) deviceOffsets[i] + k], "chunk " + i);
                }
            }
            assertEquals(TransferState.COMPLETE, down.transferState());
        }
        stream.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aBatchOfUploadsAndOneOfDownloadsAreOneDriverCallEach() {
        Simulated sim = new Simulated();
        roundTrip(sim, CopyBatch.Submission.BATCHED, 37, 1);
        assertEquals(2, sim.gpu.batchCopyCalls());
        assertEquals(0, sim.gpu.singleCopyCalls());
    }

    @Test
    void aDriverWithoutTheBatchEntryPointGetsOneCopyAtATime() {
        Simulated sim = new Simulated(new FakeDriverApi().withoutSymbol(BATCH));
        roundTrip(sim, CopyBatch.Submission.BATCHED, 64, 2);
        assertEquals(0, sim.gpu.batchCopyCalls(), "the simulated driver throws if the missing entry point is called");
        assertEquals(128, sim.gpu.singleCopyCalls());
    }

    @Test
    void aCuda12DriverGetsOneCopyAtATime() {
        Simulated sim = new Simulated(new FakeDriverApi().version(12080)); // 12.8: only the failIdx entry point
        roundTrip(sim, CopyBatch.Submission.BATCHED, 5, 3);
        assertEquals(0, sim.gpu.batchCopyCalls());
        assertEquals(10, sim.gpu.singleCopyCalls());
    }

    @Test
    void oneAtATimeCanBeAskedForOnAnyDriver() {
        Simulated sim = new Simulated();
        roundTrip(sim, CopyBatch.Submission.ONE_AT_A_TIME, 9, 4);
        assertEquals(0, sim.gpu.batchCopyCalls());
        assertEquals(18, sim.gpu.singleCopyCalls());
    }

    @Test
    void theCountersSayWhichPathRan() {
        Simulated batchedSim = new Simulated();
        Simulated oldSim = new Simulated(new FakeDriverApi().withoutSymbol(BATCH));
        for (Simulated sim : List.of(batchedSim, oldSim)) {
            CudaContext ctx = sim.context();
            try (CopyBatch batch = CopyBatch.create(2); DeviceBuffer a = ctx.allocate(64); DeviceBuffer b = ctx.allocate(64)) {
                batch.copy(a.bytes(), b.bytes()).submit(ctx.computeStream());
                batch.copy(b.bytes(), a.bytes()).submit(ctx.computeStream());
                boolean batched = sim == batchedSim;
                assertEquals(batched ? 2 : 0, batch.batchedSubmissions());
                assertEquals(batched ? 0 : 2, batch.oneAtATimeSubmissions());
            }
        }
    }

    @Test
    void deviceToDeviceCopiesMoveBytes() {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        Stream stream = ctx.createStream();
        Random random = new Random(5);
        byte[] data = new byte[37 * 100];
        random.nextBytes(data);
        try (CopyBatch batch = CopyBatch.create(37); DeviceBuffer from = ctx.allocate(data.length);
                DeviceBuffer to = ctx.allocate(data.length)) {
            from.bytes().copyFrom(data);
            stream.memset(to.bytes(), POISON);
            for (int i = 0; i < 37; i++) { // chunk i goes to slot (i * 5) % 37, a permutation
                batch.copy(to.bytes().slice((i * 5L) % 37 * 100, 100), from.bytes().slice(i * 100L, 100));
            }
            batch.submit(stream);
            stream.synchronize();
            byte[] back = new byte[data.length];
            to.bytes().copyTo(back);
            for (int i = 0; i < 37; i++) {
                int slot = (i * 5) % 37;
                for (int k = 0; k < 100; k++) {
                    assertEquals(data[i * 100 + k], back[slot * 100 + k]);
                }
            }
        }
        assertEquals(1, sim.gpu.batchCopyCalls());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void badCopiesAreRefusedWhenAddedAndNeverReachTheDriver() {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        sim.faults.countCalls();
        try (CopyBatch batch = CopyBatch.create(2); PinnedBuffer pinned = ctx.allocatePinned(64);
                DeviceBuffer device = ctx.allocate(128)) {
            assertThrows(IndexOutOfBoundsException.class, () -> batch.upload(device.bytes(), pinned, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> batch.upload(device.bytes().slice(0, 8), pinned, -1));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> batch.download(pinned, 32, device.bytes().slice(0, 64)));
            assertThrows(IllegalArgumentException.class, () -> batch.copy(device.bytes(), device.bytes().slice(0, 8)));
            assertEquals(0, batch.size(), "a refused copy is not added");
            batch.upload(device.bytes().slice(0, 8), pinned, 0).upload(device.bytes().slice(8, 8), pinned, 8);
            IllegalStateException full = assertThrows(IllegalStateException.class,
                    () -> batch.upload(device.bytes().slice(16, 8), pinned, 16));
            assertTrue(full.getMessage().contains("holds 2 copies"), full.getMessage());
            batch.clear();
            batch.upload(device.bytes().slice(0, 0), pinned, 64); // 0 bytes: nothing to add
            assertEquals(0, batch.size());
            batch.submit(ctx.computeStream()); // empty: nothing queued
        }
        assertEquals(0, sim.faults.calls(BATCH) + sim.faults.calls("cuMemcpyAsync"));
        assertThrows(IllegalArgumentException.class, () -> CopyBatch.create(0));
    }

    @Test
    void aCopyOfAnotherContextIsRefused() {
        Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
        CudaContext zero = sim.context();
        CudaContext one = sim.cuda.device(1).context();
        try (CopyBatch batch = CopyBatch.create(4); DeviceBuffer a = zero.allocate(16); DeviceBuffer b = one.allocate(16);
                PinnedBuffer p = one.allocatePinned(16)) {
            batch.copy(a.bytes(), a.bytes().slice(0, 16));
            assertThrows(IllegalArgumentException.class, () -> batch.copy(b.bytes(), b.bytes()));
            assertThrows(IllegalArgumentException.class, () -> batch.copy(a.bytes(), b.bytes()));
            assertThrows(IllegalArgumentException.class, () -> batch.upload(a.bytes(), p, 0));
            Stream other = one.createStream();
            assertThrows(IllegalArgumentException.class, () -> batch.submit(other));
            assertEquals(1, batch.size());
        }
    }

    @Test
    void aBatchIsRefusedInsideACaptureAndKeepsItsCopies() {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        Stream stream = ctx.createStream();
        try (CopyBatch batch = CopyBatch.create(4); DeviceBuffer a = ctx.allocate(64); DeviceBuffer b = ctx.allocate(64)) {
            batch.copy(a.bytes(), b.bytes());
            StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL);
            CaptureActiveException e = assertThrows(CaptureActiveException.class, () -> batch.submit(stream));
            assertTrue(e.getMessage().contains("no graph node for a batch of copies"), e.getMessage());
            assertEquals(1, batch.size(), "nothing was queued: the copies stay");
            capture.abort();
            batch.submit(stream);
            assertEquals(0, batch.size());
        }
        assertEquals(1, sim.gpu.batchCopyCalls(), "only the submission after the capture reached the driver");
    }

    @Test
    void pinnedBuffersAreFencedAndTheNextSubmissionFollowsThemWithoutAHostWait() {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        Stream stream = ctx.createStream();
        try (CopyBatch batch = CopyBatch.create(4); PinnedBuffer p = ctx.allocatePinned(64);
                PinnedBuffer q = ctx.allocatePinned(64); DeviceBuffer d = ctx.allocate(128)) {
            p.segment().fill((byte) 1);
            q.segment().fill((byte) 2);
            sim.gpu.hold(stream.handle());
            batch.upload(d.bytes().slice(0, 64), p, 0).upload(d.bytes().slice(64, 64), q, 0).submit(stream);
            assertEquals(TransferState.EVENT_RECORDED, p.transferState());
            assertEquals(TransferState.EVENT_RECORDED, q.transferState());
            // The next batch through p follows the first in stream order: the host does not wait.
            batch.download(p, 0, d.bytes().slice(64, 64)).submit(stream);
            assertEquals(List.of(), sim.gpu.blockingHostWaits());
            byte[] back = p.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE); // waits for both batches
            for (byte v : back) {
                assertEquals(2, v);
            }
            assertEquals(TransferState.EVENT_RECORDED, q.transferState(), "a state is read without waiting");
            q.awaitTransfer();
            assertEquals(TransferState.COMPLETE, q.transferState(), "q's own fence, recorded after the first batch, completed");
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aFailedBatchReportsItsOwnErrorAndStillFencesItsPinnedBuffers() {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        Stream stream = ctx.createStream();
        try (CopyBatch batch = CopyBatch.create(4); PinnedBuffer p = ctx.allocatePinned(64); DeviceBuffer d = ctx.allocate(64)) {
            sim.faults.replaceOnce(BATCH, CudaDriver.CUDA_ERROR_INVALID_VALUE());
            batch.upload(d.bytes(), p, 0);
            CudaException e = assertThrows(CudaException.class, () -> batch.submit(stream));
            assertEquals("cuMemcpyBatchAsync", e.operation());
            assertEquals(TransferState.EVENT_RECORDED, p.transferState());
            assertEquals(0, batch.size(), "a batch the driver failed is dropped");
            p.segment().fill((byte) 7);
            batch.upload(d.bytes(), p, 0).submit(stream);
            byte[] back = new byte[64];
            d.bytes().copyTo(back);
            for (byte v : back) {
                assertEquals(7, v);
            }
        }
    }

    @Test
    void aClosedOwnerIsRefusedAtSubmitAndNothingIsQueued() {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        Stream stream = ctx.createStream();
        try (CopyBatch batch = CopyBatch.create(4); PinnedBuffer p = ctx.allocatePinned(64)) {
            DeviceBuffer d = ctx.allocate(64);
            batch.upload(d.bytes(), p, 0);
            d.close();
            assertThrows(IllegalStateException.class, () -> batch.submit(stream));
            assertEquals(1, batch.size());
            batch.close();
            assertThrows(IllegalStateException.class, () -> batch.submit(stream));
        }
        assertEquals(0, sim.gpu.batchCopyCalls());
        assertEquals(List.of(), sim.gpu.violations());
    }
}
