package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.OutOfMemoryCounters;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * The out-of-memory ladder and the caps on a real device. The device is filled with 4 GiB
 * buffers until even the ladder cannot make room (the failure's report is checked against the
 * driver); then two of them are used on a stream that a kernel holds busy and closed, so that
 * their frees wait in retirement for fences that have not completed; an allocation of 4 GiB then
 * runs out of memory, and succeeds once the ladder has waited for those fences and freed the
 * memory. Everything is freed at the end, whatever fails. A memory pool's hard cap is the
 * driver's {@code maxSize}.
 */
@RequiresGpu
class OutOfMemoryGpuTest {

    /** Above the device pool's largest class: each buffer is a plain cuMemAlloc, freed by its retirement. */
    private static final long CHUNK = 4L << 30;
    /** The ints the rescued allocation's check fills and reads back. */
    private static final int CHECKED = 1 << 16;
    private static final int POISON = 0x5A5A5A5A;

    @Test
    @Tag(GpuTags.LARGE) // fills the whole device: not under compute-sanitizer, which needs device memory of its own
    void anAllocationSucceedsAfterTheLadderFreesRetiredMemoryThatWasStillWaiting(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        assertTrue(ctx.options().outOfMemoryLadder(), "run without -Dgatun.oomLadder=false");
        List<AutoCloseable> owned = new ArrayList<>(); // closed in reverse, whatever fails
        Throwable failure = null;
        try {
            Stream busy = own(owned, ctx.createStream());
            Stream other = own(owned, ctx.createStream());
            Kernel spin = own(owned, Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"));
            PinnedBuffer flag = own(owned, ctx.allocatePinned(4));
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            List<DeviceBuffer> filled = new ArrayList<>();
            OutOfDeviceMemoryException full = fill(ctx, filled, owned);
            checkReport(ctx, full, filled.size());
            reporter.publishEntry("device full", filled.size() + " chunks of 4 GiB; " + full.report());

            // Two chunks wait in retirement behind a kernel that holds the stream until the flag is set.
            DeviceBuffer written = filled.get(filled.size() - 1);
            DeviceBuffer zeroed = filled.get(filled.size() - 2);
            spin.launch(busy, LaunchConfig.of(1, 32), KernelArg.address(flag.segment().address()),
                    KernelArg.pointer(written), KernelArg.f32(2f), KernelArg.i64(1024));
            busy.memset(zeroed.bytes(), (byte) 0);
            long pendingBefore = ctx.diagnostics().counters().pendingRetirements();
            written.close();
            zeroed.close();
            assertEquals(pendingBefore + 2, ctx.diagnostics().counters().pendingRetirements(), "both frees wait for the kernel");

            OutOfMemoryCounters before = ctx.diagnostics().outOfMemoryCounters();
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1); // the kernel may end now; nothing reaps meanwhile
            DeviceBuffer rescued = own(owned, other.allocate(CHUNK)); // stream-ordered: no reap before it
            OutOfMemoryCounters after = ctx.diagnostics().outOfMemoryCounters();
            reporter.publishEntry("ladder", after.toString());
            assertEquals(before.climbs() + 1, after.climbs(), "it ran out of memory first: " + after);
            assertEquals(before.rescuedByRetirement() + 1, after.rescuedByRetirement(),
                    "the retired chunks, freed once their fences were waited for, made the room: " + after);
            assertEquals(before.failures(), after.failures());
            checkUsable(other, rescued);
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            closeAll(ctx, owned, failure);
        }
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements(), "everything freed");
    }

    @Test
    void aMemoryPoolsHardCapIsTheDriversMaxSize(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        long mib = 1 << 20;
        try (Stream s = ctx.createStream();
                MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withHardCapBytes(256 * mib))) {
            DeviceBuffer first = pool.allocate(s, 160 * mib);
            OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class,
                    () -> pool.allocate(s, 128 * mib), "160 + 128 MiB pass the 256 MiB cap");
            reporter.publishEntry("capped pool", pool.usage() + "; " + pool.counters());
            assertTrue(pool.usage().reservedBytes() <= 256 * mib, "the driver kept the pool under its cap: "
                    + pool.usage());
            assertTrue(pool.counters().capRefusals() >= 1, "counted as the cap's: " + pool.counters());
            assertEquals(256 * mib, e.report().pools().stream().filter(p -> p.pool().equals(pool.toString()))
                    .findFirst().orElseThrow().hardCapBytes());
            first.close(); // freed in the stream's order: the same stream may reuse it at once
            pool.allocate(s, 128 * mib).close();
            s.synchronize();
        }
    }

    private static <T extends AutoCloseable> T own(List<AutoCloseable> owned, T owner) {
        owned.add(owner);
        return owner;
    }

    /** Allocates chunks until the ladder gives up; returns its exception. */
    private static OutOfDeviceMemoryException fill(CudaContext ctx, List<DeviceBuffer> filled, List<AutoCloseable> owned) {
        long most = ctx.device().totalMemoryBytes() / CHUNK + 1;
        while (filled.size() <= most) {
            try {
                filled.add(own(owned, ctx.allocate(CHUNK)));
            } catch (OutOfDeviceMemoryException e) {
                return e;
            }
        }
        throw new AssertionError(filled.size() + " chunks of " + CHUNK + " bytes fit on a device of "
                + ctx.device().totalMemoryBytes() + " bytes");
    }

    private static void checkReport(CudaContext ctx, OutOfDeviceMemoryException full, int chunks) {
        assertTrue(chunks >= 2, "at least two chunks fit before the device was full: " + chunks);
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", full.resultName(), "still the driver's result for catch sites");
        assertEquals(CHUNK, full.requestedBytes());
        MemoryReport r = full.report();
        assertEquals(ctx.device().totalMemoryBytes(), r.deviceTotalBytes(), r.toString());
        assertTrue(r.deviceFreeBytes() >= 0 && r.deviceFreeBytes() < CHUNK, "free less than a chunk: " + r);
        assertTrue(r.devicePoolBytes() >= chunks * CHUNK, "the chunks are the device pool's: " + r);
        assertNotNull(r.graphMemory(), r.toString());
        assertTrue(full.getMessage().contains("memory report"), full.getMessage());
        assertTrue(full.getCause() instanceof CudaException, "the driver's error is its cause");
    }

    /** The rescued memory holds what a fill wrote, read back against the CPU (poisoned first). */
    private static void checkUsable(Stream s, DeviceBuffer rescued) {
        int value = new Random(Gpu.seed()).nextInt();
        var tail = rescued.asInts().slice(rescued.byteSize() / 4 - CHECKED, CHECKED);
        s.fill(tail, POISON);
        s.fill(tail, value);
        s.synchronize();
        int[] back = new int[CHECKED];
        tail.copyTo(back);
        int[] expected = new int[CHECKED];
        Arrays.fill(expected, value);
        assertArrayEquals(expected, back, "the end of the rescued allocation");
    }

    /**
     * Closes every owner (a closed one again does nothing), then synchronizes so that every free
     * runs, and returns the default pool's memory; a failure here never hides the test's own.
     */
    private static void closeAll(CudaContext ctx, List<AutoCloseable> owned, Throwable failure) {
        RuntimeException first = null;
        for (int i = owned.size() - 1; i >= 0; i--) {
            try {
                owned.get(i).close();
            } catch (Exception e) {
                first = record(first, failure, e);
            }
        }
        try {
            ctx.synchronize(); // every free after its fence; the default pool down to its release threshold
            ctx.defaultMemoryPool().trimTo(0);
        } catch (RuntimeException e) {
            first = record(first, failure, e);
        }
        if (first != null) {
            throw first;
        }
    }

    /** Adds {@code e} to the test's failure, or keeps it as the first cleanup failure when the test passed. */
    private static RuntimeException record(RuntimeException first, Throwable failure, Exception e) {
        if (failure != null) {
            failure.addSuppressed(e);
            return first;
        }
        if (first != null) {
            first.addSuppressed(e);
            return first;
        }
        return e instanceof RuntimeException r ? r : new IllegalStateException(e);
    }
}
