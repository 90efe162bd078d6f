package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Closing never frees what queued work still touches: a kernel holds its stream (it waits for a
 * host flag) while the buffer it will write is closed; the memory must stay allocated, by the
 * driver's own account, until the kernel has finished.
 */
@RequiresGpu
class RetirementGpuTest {

    /** Larger than the device pool's largest class, so its free really returns memory to the driver. */
    private static final long BIG = 3L << 30;

    @Test
    @Tag(GpuTags.LARGE) // a 3 GiB kernel: minutes under compute-sanitizer
    void aBufferClosedUnderARunningKernelIsFreedOnlyAfterTheKernelFinishes() throws Exception {
        CudaContext ctx = Gpu.context();
        Stream s = ctx.createStream();
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4)) {
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            ctx.reap();
            long pendingBefore = ctx.diagnostics().counters().pendingRetirements();
            long buffersBefore = ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER);
            DeviceBuffer big = ctx.allocate(BIG);
            long freeWhileAllocated = ctx.diagnostics().memoryInfo().freeBytes();
            spin.launch(s, LaunchConfig.of(132, 256), KernelArg.address(flag.segment().address()), KernelArg.pointer(big),
                    KernelArg.f32(2f), KernelArg.i64(BIG / 4));
            // Closed from another thread than the one that allocated it.
            CompletableFuture.runAsync(big::close).get();
            ctx.reap();
            assertEquals(buffersBefore, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "closed for Java");
            assertEquals(pendingBefore + 1, ctx.diagnostics().counters().pendingRetirements(), "waiting for the kernel");
            long freeWhileRunning = ctx.diagnostics().memoryInfo().freeBytes();
            assertTrue(freeWhileRunning < freeWhileAllocated + BIG / 2,
                    "not freed while the kernel runs: free " + freeWhileAllocated + " -> " + freeWhileRunning);
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            s.synchronize();
            ctx.reap();
            assertEquals(pendingBefore, ctx.diagnostics().counters().pendingRetirements());
            long freeAfter = ctx.diagnostics().memoryInfo().freeBytes();
            assertTrue(freeAfter > freeWhileRunning + BIG / 2, "freed after the kernel: " + freeWhileRunning + " -> " + freeAfter);
        } finally {
            s.close();
        }
    }

    @Test
    void closingAContextsOwnersLeavesNothingLive() {
        CudaContext ctx = Gpu.context();
        long buffers = ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER);
        long pinned = ctx.diagnostics().liveOwners(OwnerKind.PINNED_BUFFER);
        long events = ctx.diagnostics().liveOwners(OwnerKind.EVENT);
        try (DeviceBuffer a = ctx.allocate(1 << 20); PinnedBuffer p = ctx.allocatePinned(1 << 20);
                var e = ctx.createEvent()) {
            // Written before it is read: compute-sanitizer's initcheck rightly flags a download of
            // memory nothing wrote.
            ctx.computeStream().memset(a.bytes(), (byte) 0x3C);
            e.record(ctx.computeStream());
            ctx.computeStream().download(p, 0, a.bytes());
            assertEquals(buffers + 1, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
            ctx.computeStream().synchronize();
            assertEquals(0x3C, p.segment().get(ValueLayout.JAVA_BYTE, (1 << 20) - 1));
        }
        ctx.synchronize();
        assertEquals(buffers, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(pinned, ctx.diagnostics().liveOwners(OwnerKind.PINNED_BUFFER));
        assertEquals(events, ctx.diagnostics().liveOwners(OwnerKind.EVENT));
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(0, ctx.diagnostics().counters().failedRetirements());
    }
}
