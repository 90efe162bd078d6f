package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * {@code ctx.diagnostics()} (issue 35 §2) is a view: one per context, owning nothing, reading what
 * the context keeps. Its counts stay readable once the context closed; what asks the driver is
 * refused then, with the context's own refusal.
 */
class ContextDiagnosticsTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @Test
    void itIsOneViewThatReadsWhatTheContextCounts() {
        ContextDiagnostics d = ctx.diagnostics();
        assertSame(d, ctx.diagnostics(), "one view per context, made with it");
        assertSame(d.devicePool(), ctx.diagnostics().devicePool());
        long buffers = d.liveOwners(OwnerKind.DEVICE_BUFFER);
        long allocations = d.counters().syncAllocations();
        long liveBytes = d.counters().liveBytes();
        long free = d.memoryInfo().freeBytes();
        try (DeviceBuffer b = ctx.allocate(4096)) {
            assertEquals(buffers + 1, d.liveOwners(OwnerKind.DEVICE_BUFFER), "read now, not when the view was made");
            assertEquals(allocations + 1, d.counters().syncAllocations());
            assertTrue(d.counters().liveBytes() >= liveBytes + 4096, d.counters().toString());
            assertTrue(d.memoryInfo().freeBytes() <= free - 4096, "the driver asked now: " + d.memoryInfo());
        }
        assertEquals(buffers, d.liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void itsCountsOutliveTheContextAndWhatAsksTheDriverIsRefusedAfterClose() {
        ContextDiagnostics d = ctx.diagnostics();
        try (DeviceBuffer b = ctx.allocate(64)) {
            b.bytes().copyFrom(new byte[64]);
        }
        ctx.close();
        assertEquals(1, d.counters().hostToDeviceCopies(), "the counts are readable after close");
        assertEquals(0, d.liveOwners(OwnerKind.STREAM), "the context's own streams were retired");
        assertEquals(0, d.outOfMemoryCounters().climbs());
        assertEquals(0, d.pendingCompletions());
        assertEquals(0, d.watchStreams());
        assertTrue(d.poisonedBy().isEmpty());
        for (Executable asksTheDriver : List.<Executable>of(d::memoryInfo, d::memoryReport, d::graphMemoryUsage,
                d::trimGraphMemory, d::resetGraphMemoryPeaks, () -> d.devicePool().trim())) {
            IllegalStateException e = assertThrows(IllegalStateException.class, asksTheDriver);
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }
}
