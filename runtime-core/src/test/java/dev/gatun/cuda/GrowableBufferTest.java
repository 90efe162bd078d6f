package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.RetirementQueue;
import dev.gatun.cuda.internal.memory.VmmReservation;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/** Growable buffers (virtual memory management) on the simulated driver: 2 MiB granularity unless a test sets it. */
class GrowableBufferTest {

    private static final long MiB = 1 << 20;
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Random random = new Random(13);

    @AfterEach
    void nothingLeftOrMisused() {
        ctx.close(); // refuses while a growable buffer, a view of one, or a graph is open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveReservations(), "every range freed");
        assertEquals(0, sim.gpu.livePhysicalAllocations(), "every chunk released");
    }

    /** inc(p, n): p[i] += 1 over n ints, as one kernel over the whole mapped range. */
    private Kernel incrementKernel() {
        sim.gpu.kernelBody("inc", l -> {
            var v = l.memory(l.pointer(0), 4L * l.i32(1));
            for (int i = 0; i < l.i32(1); i++) {
                v.setAtIndex(ValueLayout.JAVA_INT, i, v.getAtIndex(ValueLayout.JAVA_INT, i) + 1);
            }
        });
        ctx.modules().load("m", ModuleImage.ptx("inc.ptx", Ptx.module("inc", "u64", "u32")));
        return ctx.modules().kernel("m", "inc");
    }

    private int[] randomInts(long bytes) {
        return random.ints((int) (bytes / 4)).toArray();
    }

    @Test
    void growsInPlaceAndCopiesAndKernelsSeeTheMappedRangeAsOne() {
        try (Kernel inc = incrementKernel(); GrowableBuffer g = ctx.reserveGrowable(16 * MiB)) {
            assertEquals(16 * MiB, g.reservedBytes());
            assertEquals(2 * MiB, g.chunkBytes(), "the recommended granularity");
            long base = g.baseAddress();
            long high = 0;
            for (long size : new long[] {MiB, 3 * MiB, 3 * MiB + 4, 8 * MiB, 13 * MiB}) {
                g.grow(size);
                assertEquals(base, g.baseAddress(), "the base never moves");
                assertEquals(size, g.byteSize());
                DeviceBuffer whole = g.mapped();
                assertEquals(base, whole.address());
                assertEquals(size, whole.byteSize());
                int[] data = randomInts(size);
                whole.asInts().copyFrom(data); // one copy over every chunk
                inc.prepare(LaunchConfig.covering(data.length, 256), KernelArg.pointer(whole), KernelArg.i32(data.length))
                        .launch(ctx.computeStream());
                int[] back = new int[data.length];
                Arrays.fill(back, 0x7fc00000);
                whole.asInts().copyTo(back);
                for (int i = 0; i < data.length; i++) {
                    data[i]++;
                }
                assertArrayEquals(data, back, "size " + size);
                long chunks = (size + 2 * MiB - 1) / (2 * MiB);
                high = Math.max(high, chunks * 2 * MiB);
                GrowableBufferCounters c = g.counters();
                assertEquals(chunks, c.mappedChunks());
                assertEquals(chunks * 2 * MiB, c.mappedBytes());
                assertEquals(high, c.peakMappedBytes());
                assertEquals(16 * MiB, c.reservedBytes());
                assertEquals(chunks, sim.gpu.liveMappings());
            }
            assertEquals(4, g.counters().grows(), "3 MiB + 4 bytes fit the chunks already mapped");
        }
    }

    @Test
    void aShrinkKeepsTheBytesBelowItAndClosesTheViewsPastIt() {
        try (GrowableBuffer g = ctx.reserveGrowable(16 * MiB)) {
            g.grow(2 * MiB);
            DeviceBuffer small = g.mapped();
            g.grow(8 * MiB);
            DeviceBuffer large = g.mapped();
            assertSame(large, g.mapped(), "one view per size");
            int[] data = randomInts(8 * MiB);
            large.asInts().copyFrom(data);
            long base = g.baseAddress();

            g.shrink(3 * MiB);
            assertEquals(3 * MiB, g.byteSize());
            assertEquals(2, g.counters().mappedChunks(), "[0, 3 MiB) needs two chunks");
            assertEquals(1, g.counters().shrinks());
            assertTrue(large.isClosed());
            IllegalStateException stale = assertThrows(IllegalStateException.class, large::address);
            assertTrue(stale.getMessage().contains("shrank to 3145728 bytes") && stale.getMessage().contains("mapped()"),
                    stale.getMessage());
            assertThrows(IllegalStateException.class, () -> large.asInts().copyFrom(data));
            assertFalse(small.isClosed(), "a view below the new size stays");
            assertThrows(IllegalArgumentException.class, () -> sim.gpu.deviceBytes(base + 5 * MiB, 4),
                    "the unmapped chunks are gone");

            int[] back = new int[(int) (3 * MiB / 4)];
            g.mapped().asInts().copyTo(back);
            assertArrayEquals(Arrays.copyOf(data, back.length), back, "the bytes below the new size are intact");
            g.grow(6 * MiB);
            assertEquals(base, g.baseAddress());
        }
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "closing the buffer closed its views");
    }

    @Test
    void aShrinkWaitsForQueuedWorkOnEveryStream() {
        try (Stream s = ctx.createStream(); GrowableBuffer g = ctx.reserveGrowable(8 * MiB)) {
            g.grow(8 * MiB);
            DeviceBuffer whole = g.mapped();
            long syncs = ctx.diagnostics().counters().forcedSynchronizations();
            sim.gpu.hold(s.handle()); // the GPU is busy: the memset stays queued
            s.memset(whole.bytes().slice(6 * MiB, MiB), (byte) 7);
            assertEquals(1, sim.gpu.queuedOperations(s.handle()));
            g.shrink(2 * MiB); // the simulated driver records an unmap under queued work as a violation
            assertEquals(0, sim.gpu.queuedOperations(s.handle()), "the memset ran before the unmap");
            assertTrue(ctx.diagnostics().counters().forcedSynchronizations() > syncs);
            assertEquals(List.of(), sim.gpu.violations());
        }
    }

    @Test
    void growthPastTheReservationIsTypedAndChangesNothing() {
        try (GrowableBuffer g = ctx.reserveGrowable(4 * MiB)) {
            g.grow(MiB);
            sim.faults.countCalls();
            ReservationExceededException e = assertThrows(ReservationExceededException.class, () -> g.grow(4 * MiB + 1));
            assertEquals(4 * MiB + 1, e.requestedBytes());
            assertEquals(4 * MiB, e.reservedBytes());
            assertTrue(e.getMessage().contains("reserved 4194304 bytes") && e.getMessage().contains("maxBytes"),
                    e.getMessage());
            assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
            assertEquals(MiB, g.byteSize());
            assertThrows(IllegalArgumentException.class, () -> g.grow(MiB - 1), "growing to less is a shrink");
            assertThrows(IllegalArgumentException.class, () -> g.shrink(2 * MiB), "shrinking to more is a growth");
            assertThrows(IllegalArgumentException.class, () -> g.shrink(-1));
        }
    }

    @Test
    void runningOutOfMemoryMidGrowthRollsTheNewChunksBack() {
        try (GrowableBuffer g = ctx.reserveGrowable(32 * MiB)) {
            g.grow(4 * MiB);
            int[] data = randomInts(4 * MiB);
            g.mapped().asInts().copyFrom(data);
            long base = g.baseAddress();
            for (String function : List.of("cuMemCreate", "cuMemMap", "cuMemSetAccess")) {
                // The third new chunk fails (access is set once, for all of them), and so does every
                // later call: the out-of-memory ladder's retries too.
                int skip = function.equals("cuMemSetAccess") ? 0 : 2;
                sim.faults.inject(function, OUT_OF_MEMORY, FaultPlan.Mode.REPLACE, skip, FaultPlan.ALWAYS);
                CudaException e = assertThrows(CudaException.class, () -> g.grow(12 * MiB), function);
                assertEquals(OUT_OF_MEMORY, e.result(), function);
                sim.faults.clear();
                assertEquals(4 * MiB, g.byteSize(), function);
                assertEquals(2, g.counters().mappedChunks(), function);
                assertEquals(2, sim.gpu.liveMappings(), function + ": the new chunks were unmapped");
                assertEquals(2, sim.gpu.livePhysicalAllocations(), function + ": and released");
            }
            sim.gpu.memoryLimit(ctx.diagnostics().memoryInfo().totalBytes() - ctx.diagnostics().memoryInfo().freeBytes() + 6 * MiB);
            assertEquals(OUT_OF_MEMORY, assertThrows(CudaException.class, () -> g.grow(12 * MiB)).result(),
                    "the device itself runs out after three more chunks");
            assertEquals(2, sim.gpu.liveMappings());
            int[] back = new int[data.length];
            g.mapped().asInts().copyTo(back);
            assertArrayEquals(data, back, "nothing lost");
            assertEquals(base, g.baseAddress());
            g.grow(10 * MiB);
            assertEquals(5, g.counters().mappedChunks(), "growth works again within the memory left");
        }
    }

    @Test
    void aDeviceWithoutVirtualMemoryManagementIsRefused() {
        sim.gpu.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED(), 0);
        CudaException e = assertThrows(CudaException.class, () -> ctx.reserveGrowable(4 * MiB));
        assertEquals("CUDA_ERROR_NOT_SUPPORTED", e.resultName());
        assertTrue(e.getMessage().contains("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED") && e.getMessage().contains("allocate"),
                e.getMessage());
        assertEquals(0, sim.gpu.liveReservations());
    }

    @Test
    void theReservationFallsBackToHalvesWhenAddressSpaceIsShort() {
        try (GrowableBuffer whole = ctx.reserveGrowable(GrowableBufferOptions.defaults())) {
            assertEquals(141L << 30, whole.reservedBytes(), "the device's total memory, in whole chunks");
        }
        sim.gpu.addressSpaceLimit(40 * MiB);
        LogCapture.clear();
        GrowableBufferOptions options = GrowableBufferOptions.defaults().withMaxBytes(128 * MiB)
                .withMinimumReservedBytes(16 * MiB);
        try (GrowableBuffer g = ctx.reserveGrowable(options)) {
            assertEquals(32 * MiB, g.reservedBytes(), "128, then 64, then 32 MiB");
            LogCapture.expect(Level.INFO, GrowableBuffer.class, "reserved 33554432 bytes", "instead of the 134217728");
            assertThrows(ReservationExceededException.class, () -> g.grow(33 * MiB));
        }
        CudaException e = assertThrows(CudaException.class, () -> ctx.reserveGrowable(64 * MiB), "exactly: no fallback");
        assertEquals(OUT_OF_MEMORY, e.result());
        assertEquals(OUT_OF_MEMORY, assertThrows(CudaException.class,
                () -> ctx.reserveGrowable(options.withMinimumReservedBytes(48 * MiB))).result(), "not below the minimum");
    }

    @Test
    void chunksAreTheRecommendedGranularityOrAMultipleOfTheMinimum() {
        sim.gpu.granularity(64 * 1024, 256 * 1024);
        try (GrowableBuffer g = ctx.reserveGrowable(MiB)) {
            assertEquals(256 * 1024, g.chunkBytes());
            g.grow(300 * 1024);
            assertEquals(2, g.counters().mappedChunks());
        }
        try (GrowableBuffer g = ctx.reserveGrowable(GrowableBufferOptions.exactly(MiB).withChunkBytes(192 * 1024))) {
            assertEquals(192 * 1024, g.chunkBytes());
            assertEquals(1152 * 1024, g.reservedBytes(), "rounded up to whole chunks");
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ctx.reserveGrowable(GrowableBufferOptions.exactly(MiB).withChunkBytes(100 * 1024)));
        assertTrue(e.getMessage().contains("minimum allocation granularity, 65536 bytes"), e.getMessage());
        assertEquals(0, sim.gpu.liveReservations());
        assertThrows(IllegalArgumentException.class, () -> new GrowableBufferOptions(-1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new GrowableBufferOptions(MiB, 2 * MiB, 0));
        assertThrows(IllegalArgumentException.class, () -> GrowableBufferOptions.exactly(0));
    }

    @Test
    void closingWaitsForTheWorkQueuedOnItsViews() {
        try (Stream s = ctx.createStream()) {
            GrowableBuffer g = ctx.reserveGrowable(8 * MiB);
            g.grow(4 * MiB);
            DeviceBuffer view = g.mapped();
            sim.gpu.hold(s.handle()); // the GPU is busy: the memset stays queued
            s.memset(view.bytes(), (byte) 1);
            g.close();
            assertTrue(view.isClosed(), "closing the buffer closes its views");
            assertThrows(IllegalStateException.class, g::mapped);
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GROWABLE_BUFFER));
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
            ctx.reap();
            assertEquals(1, sim.gpu.liveReservations(), "the memset is still queued: nothing is unmapped");
            assertEquals(2, sim.gpu.liveMappings());
            assertEquals(4 * MiB, g.counters().mappedBytes());
            sim.gpu.release(s.handle());
            ctx.reap(); // the view's retirement lets go of the buffer, whose own follows in the next round
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
            assertEquals(0, sim.gpu.liveReservations());
            assertEquals(0, sim.gpu.liveMappings());
            assertEquals(0, g.counters().mappedBytes(), "every chunk released");
            assertEquals(0, g.counters().mappedChunks());
            assertEquals(4 * MiB, g.counters().peakMappedBytes());
        }
    }

    @Test
    void aShrinkIsRefusedWhileACapturedGraphHoldsAViewPastIt() {
        try (Stream s = ctx.createStream(); GrowableBuffer g = ctx.reserveGrowable(8 * MiB)) {
            g.grow(8 * MiB);
            DeviceBuffer whole = g.mapped();
            Graph graph;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                s.memset(whole.bytes(), (byte) 2);
                graph = capture.end();
            }
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.shrink(2 * MiB));
            assertTrue(e.getMessage().contains("a captured graph holds"), e.getMessage());
            assertEquals(0, sim.faults.calls("cuMemUnmap"));
            assertEquals(8 * MiB, g.byteSize());
            assertFalse(whole.isClosed());
            graph.close();
            ctx.reap();
            g.shrink(2 * MiB);
            assertTrue(whole.isClosed());
            assertEquals(1, g.counters().mappedChunks());
        }
    }

    @Test
    void aGrowthByOneChunkIsOneCreateMapAndSetAccessAndAShrinkOneUnmapAndRelease() {
        try (GrowableBuffer g = ctx.reserveGrowable(8 * MiB)) {
            g.grow(2 * MiB);
            sim.faults.countCalls();
            g.grow(4 * MiB);
            assertEquals(1, sim.faults.calls("cuMemCreate"));
            assertEquals(1, sim.faults.calls("cuMemMap"));
            assertEquals(1, sim.faults.calls("cuMemSetAccess"));
            g.shrink(2 * MiB);
            assertEquals(1, sim.faults.calls("cuMemUnmap"));
            assertEquals(1, sim.faults.calls("cuMemRelease"));
            assertEquals(0, sim.faults.calls("cuMemAddressFree"));
        }
    }

    @Test
    void aLaunchPreparedOverAViewPastAShrinkIsRefused() {
        try (Kernel inc = incrementKernel(); GrowableBuffer g = ctx.reserveGrowable(8 * MiB)) {
            g.grow(8 * MiB);
            KernelLaunch launch = inc.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(g.mapped()), KernelArg.i32(8));
            launch.launch(ctx.computeStream());
            g.shrink(4 * MiB);
            int launches = sim.gpu.launches();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> launch.launch(ctx.computeStream()));
            assertTrue(e.getMessage().contains("shrank to 4194304 bytes"), e.getMessage());
            assertEquals(launches, sim.gpu.launches(), "nothing reached the driver");
            launch.setPointer(0, g.mapped().asInts()).launch(ctx.computeStream());
            assertEquals(launches + 1, sim.gpu.launches());
        }
    }

    @Test
    void aChunkWhoseUnmapFailsIsRetiredAndTheRangeFreedAfterIt() {
        GrowableBuffer g = ctx.reserveGrowable(8 * MiB);
        g.grow(6 * MiB);
        assertEquals(3, sim.gpu.liveMappings(), "after growth");
        LogCapture.clear();
        // The shrink's unmap of the top chunk fails, and so do retirement's first two tries (at
        // the hand-over and at the shrink's closing reap); the third, at the reap below, succeeds.
        sim.faults.inject("cuMemUnmap", CudaDriver.CUDA_ERROR_INVALID_VALUE(), FaultPlan.Mode.REPLACE, 0, 3);
        g.shrink(4 * MiB);
        LogCapture.expect(Level.WARN, VmmReservation.class, "Unmapping chunk 2 of GrowableBuffer#");
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Freeing chunk 2 of GrowableBuffer#", "will retry");
        assertEquals(3, sim.gpu.liveMappings(), "chunks 0 and 1 kept, chunk 2 waiting in retirement");
        assertEquals(3, g.counters().mappedChunks(), "the retiring chunk still counts");
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
        g.close();
        assertEquals(1, sim.gpu.liveReservations(), "the range waits for the retiring chunk");
        ctx.reap(); // the chunk's retry succeeds, which lets the buffer's own retirement free the rest
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(0, sim.gpu.liveMappings());
        assertEquals(0, sim.gpu.liveReservations());
        assertEquals(0, g.counters().mappedBytes());
        assertEquals(List.of(), sim.gpu.violations(), "no range freed under a mapping");
    }
}
