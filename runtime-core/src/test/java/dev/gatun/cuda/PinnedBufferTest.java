package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

class PinnedBufferTest {

    private static final int UNKNOWN = 999;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();

    @Test
    void transfersMoveBytesAndTheHostWaitsForThem() {
        try (PinnedBuffer pinned = ctx.allocatePinned(256); DeviceBuffer device = ctx.allocate(128)) {
            MemorySegment host = pinned.segment();
            for (int i = 0; i < 256; i++) {
                host.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            }
            sim.gpu.hold(stream.handle());
            stream.upload(device.bytes(), pinned, 100);
            assertEquals(TransferState.EVENT_RECORDED, pinned.transferState());
            stream.download(pinned, 0, device.bytes());
            // segment() waits: the simulated GPU finishes the held work first.
            MemorySegment after = pinned.segment();
            assertEquals(TransferState.COMPLETE, pinned.transferState());
            for (int i = 0; i < 128; i++) {
                assertEquals((byte) (100 + i), after.get(ValueLayout.JAVA_BYTE, i));
            }
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void outOfRangeTransfersAreRejectedBeforeTheDriver() {
        sim.faults.countCalls();
        try (PinnedBuffer pinned = ctx.allocatePinned(64); DeviceBuffer device = ctx.allocate(128)) {
            assertThrows(IndexOutOfBoundsException.class, () -> stream.upload(device.bytes(), pinned, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> stream.download(pinned, 32, device.bytes().slice(0, 64)));
            assertThrows(IndexOutOfBoundsException.class, () -> stream.upload(device.bytes().slice(0, 8), pinned, -1));
        }
        assertEquals(0, sim.faults.calls("cuMemcpyHtoDAsync_v2") + sim.faults.calls("cuMemcpyDtoHAsync_v2"));
    }

    @Test
    void aFailedCopyReportsItsOwnErrorEvenWhenTheFenceFailsToo() {
        try (PinnedBuffer pinned = ctx.allocatePinned(64); DeviceBuffer device = ctx.allocate(64)) {
            sim.faults.replaceOnce("cuMemcpyHtoDAsync_v2", 1);
            sim.faults.replaceAlways("cuEventRecord", UNKNOWN);
            CudaException e = assertThrows(CudaException.class, () -> stream.upload(device.bytes(), pinned, 0));
            assertEquals("cuMemcpyHtoDAsync", e.operation());
            assertEquals("CUDA_ERROR_INVALID_VALUE", e.resultName());
            assertEquals(TransferState.UNFENCED, pinned.transferState());
            sim.faults.clear();
        }
    }

    @Test
    void aRepairedFenceStillFailsTheOperationButFencesTheBuffer() {
        try (PinnedBuffer pinned = ctx.allocatePinned(64); DeviceBuffer device = ctx.allocate(64)) {
            sim.faults.replaceOnce("cuEventRecord", UNKNOWN);
            CudaException e = assertThrows(CudaException.class, () -> stream.upload(device.bytes(), pinned, 0));
            assertTrue(e.operation().startsWith("cuEventRecord (fence after cuMemcpyHtoDAsync"), e.operation());
            assertEquals(TransferState.EVENT_RECORDED, pinned.transferState());
        }
    }

    @Test
    void aBufferWhoseFenceFailedTwiceIsFreedOnlyAfterCompletionIsProven() {
        PinnedBuffer pinned = ctx.allocatePinned(64);
        DeviceBuffer device = ctx.allocate(64);
        sim.gpu.hold(stream.handle());
        sim.faults.inject("cuEventRecord", UNKNOWN, dev.gatun.cuda.testing.FaultPlan.Mode.REPLACE, 0, 2);
        assertThrows(CudaException.class, () -> stream.download(pinned, 0, device.bytes()));
        assertEquals(TransferState.UNFENCED, pinned.transferState());
        sim.faults.replaceAlways("cuEventRecord", UNKNOWN); // recording keeps failing for a while
        pinned.close();
        assertThrows(IllegalStateException.class, pinned::segment, "closed at once for the host");
        ctx.reap();
        assertEquals(1, sim.gpu.liveHostAllocations() - stagingBlocks(), "no fence could be recorded: not freed");
        sim.faults.clear(); // the next reap records a fresh fence behind the queued copy
        ctx.reap();
        assertEquals(1, sim.gpu.liveHostAllocations() - stagingBlocks(), "the fresh fence waits behind the held copy");
        sim.gpu.release(stream.handle());
        ctx.reap();
        assertEquals(0, sim.gpu.liveHostAllocations() - stagingBlocks());
        assertEquals(List.of(), sim.gpu.violations());
        device.close();
    }

    @Test
    void theSegmentIsUnusableAfterClose() {
        PinnedBuffer pinned = ctx.allocatePinned(16);
        MemorySegment view = pinned.segment();
        view.set(ValueLayout.JAVA_INT, 0, 42);
        pinned.close();
        assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_INT, 0));
        assertThrows(IllegalStateException.class, pinned::awaitTransfer);
    }

    @Test
    void aDoubleBufferedPrefetchOverManyWavesIsRaceFree() {
        int waves = 40;
        int n = 1024;
        Stream copy = ctx.copyStream();
        Stream compute = ctx.computeStream();
        try (PinnedBuffer a = ctx.allocatePinned(n); PinnedBuffer b = ctx.allocatePinned(n);
                DeviceBuffer da = ctx.allocate(n); DeviceBuffer db = ctx.allocate(n); DeviceBuffer sum = ctx.allocate(n)) {
            PinnedBuffer[] host = {a, b};
            DeviceBuffer[] dev = {da, db};
            byte[] expected = new byte[n];
            for (int wave = 0; wave < waves; wave++) {
                PinnedBuffer h = host[wave & 1];
                MemorySegment seg = h.segment(); // waits for this buffer's previous upload
                seg.fill((byte) wave);
                if (wave % 3 == 0) {
                    sim.gpu.hold(copy.handle());
                }
                copy.upload(dev[wave & 1].bytes(), h, 0);
                Fence ready = copy.recordFence();
                compute.waitFor(ready);
                compute.waitFor(ready); // consumed: a second wait is a no-op
                assertTrue(ready.isConsumed());
                compute.copy(sum.bytes(), dev[wave & 1].bytes());
                if (wave % 3 == 0) {
                    sim.gpu.release(copy.handle());
                }
                java.util.Arrays.fill(expected, (byte) wave);
            }
            byte[] out = new byte[n];
            sum.bytes().copyTo(out);
            assertArrayEquals(expected, out);
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    private int stagingBlocks() {
        return (int) ctx.diagnostics().liveOwners(OwnerKind.STAGING);
    }
}
