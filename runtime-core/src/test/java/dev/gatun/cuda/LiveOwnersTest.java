package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link ContextDiagnostics#liveOwners()}: with leak tracking, the owners not yet closed, each named as
 * its {@code toString()} names it and with the stack that created it.
 */
class LiveOwnersTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.cuda.device(0).context(ContextOptions.defaults().withLeakTracking(true));

    @Test
    void listsWhatIsOpenWithItsAllocationSiteUntilItIsClosed() {
        List<LiveOwner> before = ctx.diagnostics().liveOwners();
        assertEquals(List.of(OwnerKind.STREAM, OwnerKind.STREAM, OwnerKind.MEMORY_POOL),
                before.stream().map(LiveOwner::kind).toList(),
                "a fresh context holds its compute and copy streams and its view of the default memory pool");

        DeviceBuffer buffer = ctx.allocate(64);
        Stream stream = ctx.createStream();
        List<LiveOwner> open = ctx.diagnostics().liveOwners();
        assertEquals(before, open.subList(0, 3), "oldest first: the context's own owners");
        LiveOwner b = open.get(3);
        LiveOwner s = open.get(4);
        assertEquals(OwnerKind.DEVICE_BUFFER, b.kind());
        assertEquals(buffer.toString(), b.identity());
        assertTrue(b.identity().startsWith("DeviceBuffer#" + b.id()), b.identity());
        assertEquals(OwnerKind.STREAM, s.kind());
        assertEquals(stream.toString(), s.identity());
        assertTrue(b.allocationSite().stream().anyMatch(f -> f.getClassName().equals(LiveOwnersTest.class.getName())
                && f.getMethodName().equals("listsWhatIsOpenWithItsAllocationSiteUntilItIsClosed")),
                "the allocation site reaches the test that allocated: " + b.allocationSite());

        buffer.close();
        assertEquals(List.of(before.get(0), before.get(1), before.get(2), s), ctx.diagnostics().liveOwners(),
                "a closed owner is gone at once");
        stream.close();
        assertEquals(before, ctx.diagnostics().liveOwners());
    }

    @Test
    void listsTheModulesTheRegistryHoldsAndTheKernelsMadeFromThem() {
        ctx.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
        try (Kernel k = ctx.modules().kernel("m", "k")) {
            List<OwnerKind> kinds = ctx.diagnostics().liveOwners().stream().map(LiveOwner::kind).toList();
            assertEquals(List.of(OwnerKind.STREAM, OwnerKind.STREAM, OwnerKind.MEMORY_POOL, OwnerKind.MODULE,
                    OwnerKind.KERNEL), kinds);
            assertEquals(k.toString(), ctx.diagnostics().liveOwners().get(4).identity());
        }
        ctx.modules().unload("m");
        ctx.synchronize(); // the kernel's retirement drops the last reference to the module
        assertEquals(List.of(OwnerKind.STREAM, OwnerKind.STREAM, OwnerKind.MEMORY_POOL),
                ctx.diagnostics().liveOwners().stream().map(LiveOwner::kind).toList());
    }

    @Test
    void withoutLeakTrackingTheListIsRefusedAndSaysHowToGetIt() {
        CudaContext untracked = new Simulated().context();
        try (DeviceBuffer _ = untracked.allocate(16)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, untracked.diagnostics()::liveOwners);
            assertTrue(e.getMessage().contains("ContextOptions.withLeakTracking(true)"), e.getMessage());
            assertEquals(1, untracked.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "the counts are kept regardless");
        }
    }
}
