package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hard caps and soft limits of Gatun's device pool and of CUDA memory pools, on the simulated
 * driver: a request over a hard cap climbs the out-of-memory ladder and then fails with the
 * report (or is rescued by what the ladder freed); an idle pool above its soft limit gives memory
 * back at a safe point, a busy one does not; the driver's {@code maxSize} where it has one, Gatun's
 * own count where it does not.
 */
class MemoryCapsTest {

    private static final long MiB = 1 << 20;

    private Simulated sim = new Simulated();
    private CudaContext ctx;

    @AfterEach
    void nothingUnsafe() {
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(List.of(), LogCapture.unexpectedErrors());
    }

    private CudaContext open(DevicePoolOptions pool) {
        ctx = sim.cuda.device(0).context(ContextOptions.defaults().withDevicePool(pool));
        return ctx;
    }

    private CudaContext openUnpooled() {
        return open(new DevicePoolOptions(0, false));
    }

    // ---- Gatun's device pool ----

    @Test
    void aDevicePoolRequestOverTheHardCapFailsAfterTheLadderWithTheReport() {
        open(new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false).withHardCapBytes(3 * MiB));
        try (DeviceBuffer a = ctx.allocate(2 * MiB)) {
            sim.faults.countCalls();
            OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class, () -> ctx.allocate(2 * MiB));
            assertTrue(e.getMessage().contains("hard cap of the device pool"), e.getMessage());
            assertEquals(2 * MiB, e.report().devicePoolBytes());
            assertEquals(0, sim.faults.calls("cuMemAlloc_v2"), "refused before the driver, the ladder's retry too");
            assertEquals(2, ctx.diagnostics().devicePool().counters().capRefusals(), "the request, and its retry after the last rung");
            assertEquals(1, ctx.diagnostics().outOfMemoryCounters().failures());
            try (DeviceBuffer b = ctx.allocate(MiB)) {
                assertEquals(MiB, b.byteSize(), "1 MiB more fits under the cap");
            }
        }
    }

    @Test
    void aRequestOverTheHardCapIsRescuedByTheRetirementOfABlockWhoseFencesWereWaitedFor() {
        open(new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false).withHardCapBytes(2 * MiB));
        try (Stream s = ctx.createStream()) {
            DeviceBuffer used = ctx.allocate(2 * MiB);
            HeldStreams.hold(sim, s);
            s.memset(used.bytes(), (byte) 1);
            used.close(); // back to the pool only once the memset ran
            try (DeviceBuffer again = ctx.allocate(2 * MiB)) {
                assertEquals(2 * MiB, again.byteSize());
            }
            assertEquals(1, ctx.diagnostics().outOfMemoryCounters().rescuedByRetirement());
            assertEquals(1, ctx.diagnostics().devicePool().counters().capRefusals());
            assertEquals(1, ctx.diagnostics().devicePool().counters().hits(), "the retired block, reused under the cap");
        }
    }

    @Test
    void anIdleDevicePoolAboveItsSoftLimitGivesRetainedBlocksBackAtTheNextSafePoint() {
        open(new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false).withSoftLimitBytes(2 * MiB));
        ctx.allocate(MiB).close();
        ctx.allocate(2 * MiB).close();
        ctx.allocate(3 * MiB).close(); // 6 MiB retained
        ctx.reap(); // the first check: never idle
        assertEquals(3, sim.gpu.liveDeviceAllocations());
        ctx.allocate(MiB).close(); // busy: an allocation between two safe points
        ctx.reap();
        assertEquals(3, sim.gpu.liveDeviceAllocations(), "not idle: nothing given back");
        assertEquals(0, ctx.diagnostics().devicePool().counters().softLimitTrims());
        ctx.reap(); // no allocation since the last safe point: idle
        assertEquals(1, ctx.diagnostics().devicePool().counters().softLimitTrims());
        assertEquals(1, sim.gpu.liveDeviceAllocations(), "the 3 MiB and 2 MiB blocks freed, largest first");
        assertEquals(MiB, ctx.diagnostics().devicePool().counters().retainedBytes(), "1 MiB kept, under the limit");
        ctx.synchronize();
        assertEquals(1, ctx.diagnostics().devicePool().counters().softLimitTrims(), "under the limit: nothing more");
    }

    // ---- CUDA memory pools ----

    @Test
    void aPoolsHardCapIsTheDriversMaxSizeWhereItHasOne() {
        openUnpooled();
        try (Stream s = ctx.createStream();
                MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withHardCapBytes(4 * MiB));
                DeviceBuffer a = pool.allocate(s, 3 * MiB)) {
            sim.faults.countCalls();
            OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class, () -> pool.allocate(s, 2 * MiB));
            assertEquals(2, sim.faults.calls("cuMemAllocFromPoolAsync"), "the driver refused it, and the retry");
            assertEquals(2, pool.counters().capRefusals(), "its reserved 4 MiB + 2 MiB pass the cap: the cap's refusals");
            assertEquals(4 * MiB, e.report().pools().stream().filter(p -> p.pool().equals(pool.toString()))
                    .findFirst().orElseThrow().hardCapBytes());
        }
    }

    @Test
    void onADriverWithoutMaxSizeGatunEnforcesThePoolsHardCapOnWhatItAllocated() {
        sim = new Simulated(new FakeDriverApi().version(12000));
        openUnpooled();
        try (Stream s = ctx.createStream();
                MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withHardCapBytes(4 * MiB))) {
            DeviceBuffer a = pool.allocate(s, 3 * MiB); // the driver was given no maxSize: it would refuse one
            sim.faults.countCalls();
            assertThrows(OutOfDeviceMemoryException.class, () -> pool.allocate(s, 2 * MiB));
            assertEquals(0, sim.faults.calls("cuMemAllocFromPoolAsync"), "refused before the driver, the retry too");
            assertEquals(2, pool.counters().capRefusals());
            a.close(); // its bytes no longer count
            pool.allocate(s, 4 * MiB).close();
            assertEquals(2, pool.counters().capRefusals());
        }
    }

    @Test
    void anIdlePoolAboveItsSoftLimitIsTrimmedDownToItAtTheNextSafePoint() {
        openUnpooled();
        try (Stream s = ctx.createStream(); MemoryPool pool = ctx.createMemoryPool(
                MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE).withSoftLimitBytes(2 * MiB))) {
            pool.allocate(s, 5 * MiB).close(); // freed; the pool keeps 6 MiB reserved
            assertEquals(6 * MiB, pool.usage().reservedBytes());
            ctx.reap(); // the first check: never idle
            pool.allocate(s, MiB).close(); // busy
            ctx.synchronize();
            assertEquals(6 * MiB, pool.usage().reservedBytes(), "not idle: kept");
            ctx.reap();
            assertEquals(2 * MiB, pool.usage().reservedBytes(), "idle: trimmed down to its soft limit");
            assertEquals(1, pool.counters().softLimitTrims());
            ctx.reap();
            assertEquals(1, pool.counters().softLimitTrims(), "at the limit: nothing more");
        }
    }

    @Test
    void capsAreCheckedWhenTheOptionsAreMade() {
        assertThrows(IllegalArgumentException.class, () -> MemoryPoolOptions.defaults().withHardCapBytes(0));
        assertThrows(IllegalArgumentException.class,
                () -> MemoryPoolOptions.defaults().withHardCapBytes(MiB).withSoftLimitBytes(2 * MiB));
        assertThrows(IllegalArgumentException.class, () -> new DevicePoolOptions(0, false).withSoftLimitBytes(-1));
        assertThrows(IllegalArgumentException.class,
                () -> new DevicePoolOptions(0, false).withSoftLimitBytes(2 * MiB).withHardCapBytes(MiB));
        assertEquals(MiB, MemoryPoolOptions.defaults().withSoftLimitBytes(MiB).softLimitBytes(), "a soft limit alone");
        openUnpooled();
    }
}
