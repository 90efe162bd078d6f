package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.CaptureGate;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.transfer.StagingPool;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.slf4j.event.Level;

class ContextTest {

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = sim.context();

    @Test
    void closeRefusesWhileOwnersAreOpenAndChangesNothing() {
        DeviceBuffer b = ctx.allocate(16);
        Stream s = ctx.createStream();
        IllegalStateException e = assertThrows(IllegalStateException.class, ctx::close);
        assertTrue(e.getMessage().contains("1 STREAM") && e.getMessage().contains("1 DEVICE_BUFFER"), e.getMessage());
        b.bytes().copyFrom(new byte[16]); // still usable
        b.close();
        s.close();
        ctx.close();
        assertThrows(IllegalStateException.class, ctx::computeStream);
        assertThrows(IllegalStateException.class, () -> ctx.allocate(1));
    }

    @Test
    void closeFreesEverythingTheContextEverHeld() {
        try (DeviceBuffer b = ctx.allocate(StagingPool.BLOCK_BYTES * 3)) {
            b.bytes().copyFrom(new byte[(int) StagingPool.BLOCK_BYTES * 3]); // uses staging blocks
            try (Event e = ctx.createEvent()) {
                e.record(ctx.computeStream());
            }
            Fence f = ctx.copyStream().recordFence();
            ctx.computeStream().waitFor(f);
        }
        ctx.close();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(0, sim.gpu.liveHostAllocations());
        assertEquals(0, sim.gpu.liveStreams());
        assertEquals(0, sim.gpu.liveEvents());
        assertEquals(List.of(), sim.gpu.violations());
        for (OwnerKind k : OwnerKind.values()) {
            assertEquals(0, ctx.diagnostics().liveOwners(k), k.name());
        }
    }

    @Test
    void aStickyErrorPoisonsTheContextAndLaterCallsFailFastWithTheFirstError() {
        try (DeviceBuffer a = ctx.allocate(8); DeviceBuffer b = ctx.allocate(8)) {
            sim.faults.replaceOnce("cuMemcpyDtoDAsync_v2", 700);
            LogCapture.clear();
            CudaException first = assertThrows(CudaException.class, () -> ctx.computeStream().copy(a.bytes(), b.bytes()));
            assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", first.resultName());
            LogCapture.expectPoisonedBy(first);
            ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8));
            assertSame(first, later.firstError());
            assertSame(first, ctx.diagnostics().poisonedBy().orElseThrow());
            assertEquals(700, later.result());
            assertThrows(ContextPoisonedException.class, () -> ctx.computeStream().memset(a.bytes(), (byte) 0));
        }
    }

    @Test
    void anOrdinaryErrorDoesNotPoison() {
        sim.faults.replaceAlways("cuMemAlloc_v2", FakeDriverApi.OUT_OF_MEMORY);
        CudaException e = assertThrows(CudaException.class, () -> ctx.allocate(8));
        sim.faults.clear();
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.resultName());
        ctx.allocate(8).close();
        assertTrue(ctx.diagnostics().poisonedBy().isEmpty());
    }

    @Test
    void aSynchronizingCallFailsWithATypedExceptionWhileAGlobalCaptureOutlastsTheBound() throws Exception {
        ctx.setGateTimeout(Duration.ofMillis(1));
        CaptureGate gate = ctx.state().gate();
        CaptureGate.CaptureTicket capture = CompletableFuture.supplyAsync(() -> {
            try {
                return gate.enterCapture();
            } catch (CaptureGate.GateException e) {
                throw new IllegalStateException(e);
            }
        }).get();
        sim.faults.countCalls();
        CaptureActiveException e = assertThrows(CaptureActiveException.class, () -> ctx.allocate(8));
        assertTrue(e.getMessage().contains("cuMemAlloc on device 0 would invalidate a global-mode stream capture"),
                e.getMessage());
        assertEquals(0, sim.faults.calls("cuMemAlloc_v2"), "the allocation was never attempted");
        assertThrows(CaptureActiveException.class, () -> ctx.allocatePinned(8));
        assertThrows(CaptureActiveException.class, ctx::synchronize);
        // Closing during the capture defers the synchronizing free instead of waiting.
        gate.exitCapture(capture);
        DeviceBuffer b = ctx.allocate(8);
        capture = gate.enterCapture();
        b.close();
        assertEquals(1, sim.gpu.liveDeviceAllocations());
        gate.exitCapture(capture);
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    /** An owner of another context is refused as misuse, with a message that says so. */
    static void assertMismatch(Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains("'s context, but is used with device"), e.getMessage());
    }

    @Test
    void ownersOfAnotherDeviceAreRejectedBeforeAnyDriverCall() {
        CudaContext other = sim.cuda.device(1).context();
        try (DeviceBuffer theirs = other.allocate(8); Event e = other.createEvent()) {
            sim.faults.countCalls();
            IllegalArgumentException m = assertThrows(IllegalArgumentException.class,
                    () -> ctx.computeStream().memset(theirs.bytes(), (byte) 0));
            assertTrue(m.getMessage().contains("device 1"), m.getMessage());
            assertTrue(m.getMessage().contains("use owners of one context together"), m.getMessage());
            assertMismatch(() -> e.record(ctx.computeStream()));
            assertMismatch(() -> ctx.computeStream().upload(theirs.bytes(),
                    java.lang.foreign.MemorySegment.ofArray(new byte[8])));
            assertEquals(0, sim.faults.calls("cuMemsetD8Async") + sim.faults.calls("cuEventRecord")
                    + sim.faults.calls("cuMemcpyHtoDAsync_v2"));
        }
    }

    @Test
    void ownersWorkFromManyThreadsAndCanBeClosedByAnotherThread() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<DeviceBuffer>> made = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                int fill = i;
                made.add(pool.submit(() -> {
                    DeviceBuffer b = ctx.allocate(64);
                    ctx.computeStream().memset(b.bytes(), (byte) fill);
                    return b;
                }));
            }
            List<Future<Byte>> closed = new ArrayList<>();
            for (Future<DeviceBuffer> f : made) {
                DeviceBuffer b = f.get();
                closed.add(pool.submit(() -> {
                    byte[] out = new byte[64];
                    b.bytes().copyTo(out);
                    b.close();
                    return out[63];
                }));
            }
            for (int i = 0; i < closed.size(); i++) {
                assertEquals((byte) i, closed.get(i).get());
            }
        } finally {
            pool.shutdown();
        }
        ctx.reap();
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void leakTrackingIsAnOptionOfEachContextNotOfTheProcess() {
        CudaContext tracked = sim.cuda.device(1).context(ContextOptions.defaults().withLeakTracking(true));
        try (DeviceBuffer a = tracked.allocate(16); DeviceBuffer b = ctx.allocate(16);
                Stream s = tracked.createStream()) {
            assertTrue(tracked.options().leakTracking());
            assertTrue(a.resource().allocationSite() != null, "the tracked context records where its owners began");
            assertTrue(s.state().context().leakTracking());
            assertEquals(null, b.resource().allocationSite(), "the other context does not pay for it");
        }
        tracked.close();
    }

    @Test
    void anOwnerThatIsNeverClosedIsRetiredByTheCleaner() throws Exception {
        // Leak tracking watches every buffer (without it, one allocation in LEAK_SAMPLING).
        CudaContext tracked = sim.cuda.device(1).context(ContextOptions.defaults().withLeakTracking(true));
        String leaked = leak(tracked);
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (tracked.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER) > 0 && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(10);
        }
        assertEquals(0, tracked.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "the Cleaner retired the unreachable buffer");
        // The Cleaner warns before it retires, so the warning is there once the owner is gone.
        LogCapture.expect(Level.WARN, NativeResource.class, leaked + " was never closed; retiring it now.");
        tracked.close();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    /** Allocates a buffer that nothing closes or keeps reachable; returns how the log names it. */
    private static String leak(CudaContext ctx) {
        DeviceBuffer buffer = ctx.allocate(1024);
        buffer.bytes().copyFrom(new byte[1024]);
        return buffer.resource().identity();
    }
}
