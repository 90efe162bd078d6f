package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.RetirementQueue;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.slf4j.event.Level;

/** Memory pools on the simulated driver, which reserves pool memory in 2 MiB chunks. */
class MemoryPoolTest {

    private static final long MiB = 1 << 20;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @Test
    void aNewPoolHasTheDriversDefaultsAndItsAttributesCanBeSet() {
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults())) {
            assertFalse(pool.isDeviceDefault());
            assertEquals(0, pool.releaseThresholdBytes());
            for (PoolReuse policy : PoolReuse.values()) {
                assertTrue(pool.isReuseEnabled(policy), policy.name());
            }
            pool.setReleaseThresholdBytes(64 * MiB);
            pool.setReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC, false);
            assertEquals(64 * MiB, pool.releaseThresholdBytes());
            assertFalse(pool.isReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC));
            assertTrue(pool.isReuseEnabled(PoolReuse.FOLLOW_EVENT_DEPENDENCIES));
            assertTrue(pool.isReuseEnabled(PoolReuse.ALLOW_INTERNAL_DEPENDENCIES));
            pool.setReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC, true);
            assertTrue(pool.isReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC));
        }
    }

    @Test
    void optionsAreAppliedAtCreationWithOneDriverCallEach() {
        MemoryPoolOptions options = MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE)
                .withReuse(PoolReuse.ALLOW_INTERNAL_DEPENDENCIES, false);
        sim.faults.countCalls();
        try (MemoryPool pool = ctx.createMemoryPool(options)) {
            assertEquals(1, sim.faults.calls("cuMemPoolCreate"));
            assertEquals(2, sim.faults.calls("cuMemPoolSetAttribute"), "the threshold and the one policy switched off");
            assertEquals(Long.MAX_VALUE, pool.releaseThresholdBytes());
            assertFalse(pool.isReuseEnabled(PoolReuse.ALLOW_INTERNAL_DEPENDENCIES));
            assertTrue(pool.isReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC));
        }
        sim.faults.clear();
        sim.faults.countCalls();
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults())) {
            assertEquals(0, sim.faults.calls("cuMemPoolSetAttribute"), "defaults need no attribute call");
        }
    }

    @Test
    void aFailedOptionDestroysTheNewPoolAndReportsItsOwnError() {
        sim.faults.replaceOnce("cuMemPoolSetAttribute", CudaDriver.CUDA_ERROR_INVALID_VALUE());
        CudaException e = assertThrows(CudaException.class,
                () -> ctx.createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(MiB)));
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), e.result());
        assertEquals(0, sim.gpu.liveMemoryPools(), "destroyed at once");
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.MEMORY_POOL), "the default pool's view only");
    }

    @Test
    void allocationsRoundTripAndMoveTheUsageCounters() {
        Random random = new Random(13);
        int n = 3 * (int) MiB / 4;
        int[] in = random.ints(n).toArray();
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults()); Stream s = ctx.createStream()) {
            DeviceBuffer b = pool.allocate(s, 4L * n);
            assertEquals(new MemoryUsage(3 * MiB, 3 * MiB, 4 * MiB, 4 * MiB), pool.usage());
            assertEquals(new MemoryPoolCounters(1, 0, 3 * MiB), pool.counters());
            s.fill(b.asInts(), 0x7f7f7f7f); // poison, so an unwritten element shows
            b.asInts().copyFrom(in);
            int[] out = new int[n];
            b.asInts().copyTo(out);
            assertArrayEquals(in, out);

            ContextCounters before = ctx.diagnostics().counters();
            b.close();
            s.synchronize();
            assertEquals(before.asyncFrees() + 1, ctx.diagnostics().counters().asyncFrees());
            assertEquals(before.liveBytes() - 3 * MiB, ctx.diagnostics().counters().liveBytes());
            assertEquals(new MemoryPoolCounters(1, 1, 0), pool.counters());
            assertEquals(new MemoryUsage(0, 3 * MiB, 4 * MiB, 4 * MiB), pool.usage(), "freed memory stays reserved");

            pool.trimTo(2 * MiB);
            assertEquals(2 * MiB, pool.usage().reservedBytes());
            pool.trimTo(0);
            assertEquals(new MemoryUsage(0, 3 * MiB, 0, 4 * MiB), pool.usage());
            pool.resetPeaks();
            assertEquals(new MemoryUsage(0, 0, 0, 0), pool.usage());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aBufferIsFreedInStreamOrderBehindTheWorkThatUsesIt() {
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults()); Stream s = ctx.createStream()) {
            DeviceBuffer b = pool.allocate(s, MiB);
            sim.gpu.hold(s.handle());
            s.memset(b.bytes(), (byte) 1);
            b.close();
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements(), "no retirement: the free is queued behind the memset");
            assertEquals(1, sim.gpu.livePoolAllocations(), "the memset still runs on it");
            sim.gpu.release(s.handle());
            assertEquals(0, sim.gpu.livePoolAllocations());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void closingAPoolWithALiveAllocationDefersItsDestroyUntilTheAllocationIsFreed() {
        Stream s = ctx.createStream();
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
        DeviceBuffer b = pool.allocate(s, MiB);
        pool.close();
        assertTrue(pool.isClosed());
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.MEMORY_POOL), "the default pool's view only");
        assertEquals(1, sim.gpu.liveMemoryPools(), "the buffer keeps it");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.allocate(s, MiB));
        assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        s.memset(b.bytes(), (byte) 2); // the buffer stays usable
        b.close();
        assertEquals(0, sim.gpu.liveMemoryPools(), "destroyed once its last allocation was freed");
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aClosedPoolIsDestroyedOnlyAfterTheWorkOnItsStreamsCompleted() {
        Stream s = ctx.createStream();
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
        DeviceBuffer b = pool.allocate(s, MiB);
        sim.gpu.hold(s.handle());
        s.memset(b.bytes(), (byte) 3);
        b.close();
        pool.close();
        ctx.reap();
        assertEquals(1, sim.gpu.liveMemoryPools(), "its free is still queued behind the memset");
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
        sim.gpu.release(s.handle());
        ctx.reap();
        assertEquals(0, sim.gpu.liveMemoryPools());
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aBufferUsedOnTwoStreamsIsFreedThroughRetirementAndThenThePoolGoes() {
        try (Stream a = ctx.createStream(); Stream other = ctx.createStream()) {
            MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
            DeviceBuffer b = pool.allocate(a, MiB);
            a.memset(b.bytes(), (byte) 1);
            other.memset(b.bytes(), (byte) 2);
            pool.close();
            b.close();
            ctx.reap();
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
            assertEquals(new MemoryPoolCounters(1, 1, 0), pool.counters());
            assertEquals(0, sim.gpu.livePoolAllocations());
            assertEquals(0, sim.gpu.liveMemoryPools());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void anAbandonedAllocationLetsItsClosedPoolBeRetiredOnAPoisonedContext() {
        Stream a = ctx.createStream();
        Stream other = ctx.createStream();
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
        DeviceBuffer b = pool.allocate(a, MiB);
        sim.gpu.hold(a.handle());
        sim.gpu.hold(other.handle());
        a.memset(b.bytes(), (byte) 1);
        other.memset(b.bytes(), (byte) 2);
        b.close(); // used on two streams: retirement waits for both fences
        pool.close(); // the buffer still holds it
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
        sim.faults.replaceAlways(FaultPlan.ANY, CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS());
        LogCapture.clear();
        CudaException sticky = assertThrows(CudaException.class, a::synchronize);
        LogCapture.expectPoisonedBy(sticky);
        a.close();
        other.close();
        ctx.close();
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        String why = ": the context is poisoned by a sticky error, so the driver cannot free it";
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Abandoning " + b.resource().identity() + why);
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Abandoning " + pool + why);
    }

    @Test
    void misuseIsRefusedBeforeAnyDriverCall() {
        Simulated two = new Simulated(new FakeDriverApi().deviceCount(2));
        CudaContext c0 = two.context();
        CudaContext c1 = two.cuda.device(1).context();
        MemoryPool pool = c0.createMemoryPool(MemoryPoolOptions.defaults());
        Stream s = c0.createStream();
        Stream foreign = c1.createStream();
        MemoryPool closed = c0.createMemoryPool(MemoryPoolOptions.defaults());
        closed.close();
        two.faults.countCalls();
        Map<Class<? extends RuntimeException>, List<Executable>> misuse = Map.of(
                IllegalArgumentException.class, List.of(
                        () -> pool.allocate(s, -1),
                        () -> pool.allocate(foreign, MiB),
                        () -> pool.setReleaseThresholdBytes(-1),
                        () -> pool.trimTo(-1),
                        () -> pool.setAccess(c0, MemoryAccess.READ_WRITE),
                        () -> MemoryPoolOptions.defaults().withReleaseThresholdBytes(-5)),
                IllegalStateException.class, List.of(
                        () -> closed.allocate(s, MiB),
                        closed::releaseThresholdBytes,
                        () -> closed.setReleaseThresholdBytes(0),
                        () -> closed.isReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC),
                        () -> closed.setReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC, true),
                        () -> closed.trimTo(0),
                        closed::usage,
                        closed::resetPeaks,
                        () -> closed.setAccess(c1, MemoryAccess.READ_WRITE),
                        () -> closed.access(c1)),
                NullPointerException.class, List.of(
                        () -> pool.setAccess(c1, null),
                        () -> pool.isReuseEnabled(null),
                        () -> c0.createMemoryPool(null)));
        misuse.forEach((type, calls) -> calls.forEach(call -> assertThrows(type, call)));
        assertEquals(Map.of(), two.faults.counts(), "no driver call for misuse");
        two.faults.clear();
        pool.close();
        s.close();
        foreign.close();
        c1.close();
        c0.close();
    }

    @Test
    void theDefaultPoolIsOneViewThatClosingLeavesAlone() {
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.MEMORY_POOL), "the context's own view, from its creation");
        sim.faults.countCalls();
        MemoryPool pool = ctx.defaultMemoryPool();
        assertSame(pool, ctx.defaultMemoryPool());
        assertTrue(pool.isDeviceDefault());
        assertEquals(Map.of(), sim.faults.counts(), "the driver is asked for the pool on its first use");
        assertEquals(0, pool.releaseThresholdBytes());
        assertEquals(1, sim.faults.calls("cuDeviceGetDefaultMemPool"));
        pool.releaseThresholdBytes();
        assertEquals(1, sim.faults.calls("cuDeviceGetDefaultMemPool"), "asked once");
        sim.faults.clear();
        pool.close();
        assertFalse(pool.isClosed(), "the driver's pool: closing it does nothing");
        pool.setReleaseThresholdBytes(8 * MiB);
        assertEquals(8 * MiB, pool.releaseThresholdBytes());
        try (Stream s = ctx.createStream()) {
            DeviceBuffer b = pool.allocate(s, MiB);
            assertEquals(MiB, pool.usage().usedBytes());
            b.close();
        }
        sim.faults.countCalls();
        ctx.close(); // the view is the context's own, like its two streams
        assertTrue(pool.isClosed());
        assertEquals(0, sim.faults.calls("cuMemPoolDestroy"), "Gatun never destroys the device's default pool");
        assertThrows(IllegalStateException.class, pool::usage);
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void theContextDoesNotCloseWhileAPoolMadeFromItIsOpen() {
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
        IllegalStateException e = assertThrows(IllegalStateException.class, ctx::close);
        assertTrue(e.getMessage().contains("1 MEMORY_POOL"), e.getMessage());
        pool.close();
        ctx.close();
        assertEquals(0, sim.gpu.liveMemoryPools());
    }

    @Test
    void peerDevicesGetAccessThroughThePool() {
        Simulated two = new Simulated(new FakeDriverApi().deviceCount(2));
        CudaContext c0 = two.context();
        CudaContext c1 = two.cuda.device(1).context();
        try (MemoryPool pool = c0.createMemoryPool(MemoryPoolOptions.defaults())) {
            assertEquals(MemoryAccess.READ_WRITE, pool.access(c0), "its own device");
            assertEquals(MemoryAccess.NONE, pool.access(c1));
            pool.setAccess(c1, MemoryAccess.READ_WRITE);
            assertEquals(MemoryAccess.READ_WRITE, pool.access(c1));
            pool.setAccess(c1, MemoryAccess.READ);
            assertEquals(MemoryAccess.READ, pool.access(c1));
            pool.setAccess(c1, MemoryAccess.NONE);
            assertEquals(MemoryAccess.NONE, pool.access(c1));
            assertFalse(c1.isPeerAccessEnabled(c0), "pool access needs no context-wide peer access");
        }
        c1.close();
        c0.close();
    }

    @Test
    void optionsCopyTheirPolicies() {
        MemoryPoolOptions none = new MemoryPoolOptions(0, Set.of());
        assertEquals(Set.of(PoolReuse.ALLOW_OPPORTUNISTIC), none.withReuse(PoolReuse.ALLOW_OPPORTUNISTIC, true).reuse());
        assertEquals(Set.of(PoolReuse.values()), MemoryPoolOptions.defaults().reuse());
        assertEquals(Set.of(PoolReuse.FOLLOW_EVENT_DEPENDENCIES, PoolReuse.ALLOW_INTERNAL_DEPENDENCIES),
                MemoryPoolOptions.defaults().withReuse(PoolReuse.ALLOW_OPPORTUNISTIC, false).reuse());
    }
}
