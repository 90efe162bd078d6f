package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;

class DevicePoolIntegrationTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.pooledContext();

    @Test
    void aClosedBlockIsReusedWithoutADriverCallOnceItsWorkIsDone() {
        DeviceBuffer a = ctx.allocate(1000);
        long address = a.address();
        a.close();
        sim.faults.countCalls();
        try (DeviceBuffer b = ctx.allocate(700)) {
            assertEquals(address, b.address(), "same 1 KiB class, block reused");
            assertEquals(700, b.byteSize());
        }
        assertEquals(0, sim.faults.calls("cuMemAlloc_v2"));
        DevicePoolCounters c = ctx.diagnostics().devicePool().counters();
        assertEquals(1, c.hits());
        assertEquals(1, c.misses());
        assertEquals(1, c.allocations());
    }

    @Test
    void aBlockIsNotHandedOutAgainWhileQueuedWorkStillUsesIt() {
        Stream s = ctx.createStream();
        DeviceBuffer a = ctx.allocate(4096);
        long address = a.address();
        sim.gpu.hold(s.handle());
        s.memset(a.bytes(), (byte) 1);
        a.close();
        try (DeviceBuffer b = ctx.allocate(4096)) {
            assertNotEquals(address, b.address(), "the first block's memset is still queued");
        }
        sim.gpu.release(s.handle());
        ctx.reap();
        long hits = ctx.diagnostics().devicePool().counters().hits();
        sim.faults.countCalls();
        try (DeviceBuffer c = ctx.allocate(4096)) {
            assertEquals(hits + 1, ctx.diagnostics().devicePool().counters().hits(), "now the block is free to reuse");
            assertEquals(0, sim.faults.calls("cuMemAlloc_v2"));
        }
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void closingTheContextReturnsEveryRetainedBlock() {
        for (int i = 0; i < 10; i++) {
            ctx.allocate(1 << (9 + i)).close();
        }
        assertEquals(10, sim.gpu.liveDeviceAllocations());
        ctx.close();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(0, ctx.diagnostics().counters().liveBytes());
    }

    @Test
    void outOfMemoryTrimsThePoolAndRetries() {
        sim.gpu.memoryLimit(3 << 20);
        ctx.allocate(1 << 20).close();
        ctx.allocate(2 << 20).close();
        try (DeviceBuffer big = ctx.allocate(3 << 20)) {
            assertEquals(3 << 20, big.byteSize());
        }
        assertEquals(1, ctx.diagnostics().devicePool().counters().trims());
        assertThrows(CudaException.class, () -> ctx.allocate(4 << 20));
    }

    @Test
    void theContextsPoolViewTrimsFromAnyThreadWithTheContextMadeCurrentThere() throws Exception {
        ctx.allocate(1000).close();
        ctx.allocate(5000).close();
        DevicePoolView pool = ctx.diagnostics().devicePool();
        assertEquals(2, pool.counters().retainedBlocks());
        sim.faults.countCalls();
        // A fresh thread has no current context: the frees act on the current one, so the trim
        // must make this context current there first.
        Thread trimmer = new Thread(pool::trim);
        trimmer.start();
        trimmer.join();
        assertEquals(2, sim.faults.calls("cuMemFree_v2"));
        assertEquals(1, sim.faults.calls("cuCtxSetCurrent"), "made current on the trimming thread");
        assertEquals(0, pool.counters().retainedBlocks());
        assertEquals(2, pool.counters().frees());
    }

    @Test
    void thePoolViewRefusesToTrimOnceItsContextIsClosed() {
        DevicePoolView pool = ctx.diagnostics().devicePool();
        ctx.close();
        assertThrows(IllegalStateException.class, pool::trim);
    }

    @Test
    void aContextCannotBeReopenedWithOtherOptionsWhileOpen() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> sim.cuda.device(0)
                .context(ContextOptions.defaults().withDevicePool(new DevicePoolOptions(0, false))));
        assertEquals(true, e.getMessage().contains("close it before"), e.getMessage());
    }
}
