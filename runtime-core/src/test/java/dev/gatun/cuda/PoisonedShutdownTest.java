package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.RetirementQueue;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/**
 * Shutdown after a sticky error: every close succeeds quietly, handles the driver can no longer
 * free are abandoned (counted), and the context closes. And a context closes with only its
 * registry's modules left, which its close retires itself.
 */
class PoisonedShutdownTest {

    private static final int ILLEGAL_ADDRESS = CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS();

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @Test
    void afterAnIllegalAddressEveryCloseSucceedsAndTheContextCloses() {
        ctx.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
        ctx.modules().load("n", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
        Stream stream = ctx.createStream();
        Kernel k = ctx.modules().kernel("m", "k");
        Kernel k2 = ctx.modules().kernel("n", "k");
        DeviceBuffer b = ctx.allocate(256);
        k.launch(stream, LaunchConfig.of(1, 32), KernelArg.pointer(b));
        // The fault shows at the next call; from then on the real driver fails every call.
        sim.faults.replaceAlways(FaultPlan.ANY, ILLEGAL_ADDRESS);
        LogCapture.clear();
        CudaException sticky = assertThrows(CudaException.class, stream::synchronize);
        LogCapture.expectPoisonedBy(sticky);
        assertTrue(ctx.diagnostics().poisonedBy().isPresent());
        assertThrows(ContextPoisonedException.class, () -> k.launch(stream, LaunchConfig.of(1, 32), KernelArg.pointer(b)));

        stream.close(); // the capture query fails on a poisoned context: that is not "capturing"
        k.close();
        k2.close();
        b.close();
        ctx.modules().unload("n");
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.KERNEL));
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.MODULE), "only the registry's module 'm' is left");
        ctx.close();
        assertTrue(ctx.isClosed());
        for (OwnerKind kind : OwnerKind.values()) {
            assertEquals(0, ctx.diagnostics().liveOwners(kind), kind + " left live");
        }
        assertTrue(ctx.diagnostics().counters().abandonedRetirements() >= 5,
                "stream, buffer, two modules and the context's own streams were abandoned: " + ctx.diagnostics().counters());
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        String why = ": the context is poisoned by a sticky error, so the driver cannot free it";
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Abandoning " + b.resource().identity() + why);
        LogCapture.expect(Level.WARN, RetirementQueue.class, "'m' (k.ptx");
        LogCapture.expect(Level.WARN, RetirementQueue.class, "'n' (k.ptx");
        assertTrue(LogCapture.find(Level.WARN, RetirementQueue.class, why).size() >= 5,
                "each abandoned handle is logged: " + LogCapture.events());
    }

    @Test
    void aContextClosesWhenOnlyItsRegistryHoldsModules() {
        ctx.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
        try (Kernel k = ctx.modules().kernel("m", "k")) {
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.MODULE));
            IllegalStateException open = assertThrows(IllegalStateException.class, ctx::close);
            assertTrue(open.getMessage().contains("1 KERNEL") && !open.getMessage().contains("MODULE"),
                    open.getMessage());
        }
        ctx.close();
        assertTrue(ctx.isClosed());
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.MODULE));
        assertEquals(0, sim.gpu.liveModules());
    }
}
