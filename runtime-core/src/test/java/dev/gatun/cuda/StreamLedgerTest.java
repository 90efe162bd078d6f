package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.ScheduleExplorer;
import dev.gatun.cuda.testing.ScheduleExplorer.Step;
import dev.gatun.cuda.testing.Simulated;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * The stream-ordered allocation counters, kept partly in each stream's ledger (the hot path,
 * under the stream's lock) and partly in the context (frees made by retirement): a snapshot
 * counts each allocation and free exactly once, before and after the stream is drained, and an
 * object recycled through a stream's ledger never revives a closed handle.
 */
class StreamLedgerTest {

    private static final long KIB = 1024;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    /** {asyncAllocations, asyncFrees, liveBytes} now. */
    private static long[] ordered(CudaContext ctx) {
        ContextCounters c = ctx.diagnostics().counters();
        return new long[] {c.asyncAllocations(), c.asyncFrees(), c.liveBytes()};
    }

    @Test
    void eachAllocationAndFreeIsCountedOnceAcrossStreamsRetirementAndDrain() {
        Stream a = ctx.createStream();
        Stream b = ctx.createStream();
        DeviceBuffer a1 = a.allocate(KIB);
        DeviceBuffer a2 = a.allocate(2 * KIB);
        DeviceBuffer b1 = b.allocate(4 * KIB);
        assertArrayEquals(new long[] {3, 0, 7 * KIB}, ordered(ctx), "three allocations on two streams");

        a1.close(); // freed at close, in a's order: a's ledger
        assertArrayEquals(new long[] {3, 1, 6 * KIB}, ordered(ctx), "a free at close on its sole stream");

        b.copy(b1.bytes().slice(0, 2 * KIB), a2.bytes()); // a2 is now used on two streams: retirement frees it after both fences
        a2.close();
        ctx.synchronize();
        ctx.reap();
        assertArrayEquals(new long[] {3, 2, 4 * KIB}, ordered(ctx), "a free made by retirement");

        a.close();
        ctx.synchronize();
        ctx.reap(); // a's final fence completed: a is drained, and its ledger moved into the context's counts
        assertArrayEquals(new long[] {3, 2, 4 * KIB}, ordered(ctx), "the drained stream's counts are kept, once");

        b1.close();
        b.close();
        ctx.synchronize();
        ctx.reap();
        assertArrayEquals(new long[] {3, 3, 0}, ordered(ctx), "everything freed");
        ctx.close();
    }

    @Test
    void aHandleClosedBeforeItsObjectWasRecycledOnTheSameStreamStaysClosed() {
        Stream s = ctx.createStream();
        DeviceBuffer first = s.allocate(KIB);
        long firstAddress = first.address();
        first.close();
        DeviceBuffer second = s.allocate(2 * KIB); // takes the object the first handle stood for
        assertThrows(IllegalStateException.class, first::address, "a closed handle of a recycled object");
        first.close(); // does nothing: it no longer stands for the memory
        assertEquals(2 * KIB, second.byteSize());
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER),
                "only the second allocation is live (the first was at 0x" + Long.toHexString(firstAddress) + ")");
        second.close();
        s.close();
        ctx.synchronize();
        ctx.reap();
        assertArrayEquals(new long[] {2, 2, 0}, ordered(ctx));
        ctx.close();
    }

    /**
     * A snapshot taken on one thread while another closes and drains the stream (every order of
     * the second thread's driver calls around it) counts the stream's allocations exactly once.
     */
    @Test
    void aSnapshotDuringTheDrainCountsTheStreamOnce(TestReporter reporter) {
        ScheduleExplorer.Report report = ScheduleExplorer.of("counters || stream close + drain").explore(() -> {
            Interposer interposer = Interposer.over(new FakeDriverApi());
            Simulated world = new Simulated(interposer);
            CudaContext c = world.context();
            Stream s = c.createStream();
            DeviceBuffer kept = s.allocate(3 * KIB);
            s.allocate(KIB).close();
            AtomicReference<long[]> seen = new AtomicReference<>();
            return ScheduleExplorer.Run.of(interposer, List.of(new Step("T1", () -> {
                s.close();
                c.synchronize();
                c.reap();
            }), new Step("T2", () -> seen.set(ordered(c)))), failures -> {
                assertEquals(List.of(), failures.stream().filter(t -> t != null).toList(), "a step threw");
                assertArrayEquals(new long[] {2, 1, 3 * KIB}, seen.get(), "the snapshot during the drain");
                assertArrayEquals(new long[] {2, 1, 3 * KIB}, ordered(c), "after the drain");
            }, () -> {
                kept.close();
                c.synchronize();
                c.reap();
                c.close();
            });
        });
        reporter.publishEntry("schedules", report.toString());
    }

    /** A pool's {allocations, frees, liveBytes} now. */
    private static long[] counted(MemoryPool pool) {
        MemoryPoolCounters c = pool.counters();
        return new long[] {c.allocations(), c.frees(), c.liveBytes()};
    }

    /**
     * A created pool's allocations and frees at close count on their stream's ledger for that
     * pool; another pool allocated from on the stream, a free made by retirement, and the
     * stream's drain each move or add counts, and every snapshot counts each once.
     */
    @Test
    void aPoolsCountsKeptOnItsStreamsLedgersAreCountedOnceThroughHandoversRetirementAndDrain() {
        Stream a = ctx.createStream();
        Stream b = ctx.createStream();
        try (MemoryPool p = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                MemoryPool q = ctx.createMemoryPool(MemoryPoolOptions.defaults())) {
            DeviceBuffer p1 = p.allocate(a, KIB);
            DeviceBuffer p2 = p.allocate(a, 2 * KIB);
            DeviceBuffer p3 = p.allocate(b, 4 * KIB);
            assertArrayEquals(new long[] {3, 0, 7 * KIB}, counted(p), "on two streams' ledgers");
            p1.close(); // at close, in a's order: a's ledger
            assertArrayEquals(new long[] {3, 1, 6 * KIB}, counted(p));
            DeviceBuffer q1 = q.allocate(a, 8 * KIB); // a's ledger now counts for q: p's counts go back to p
            assertArrayEquals(new long[] {3, 1, 6 * KIB}, counted(p), "after a's ledger handed p's counts back");
            assertArrayEquals(new long[] {1, 0, 8 * KIB}, counted(q));
            b.copy(p3.bytes().slice(0, 2 * KIB), p2.bytes()); // p2 used on two streams: retirement frees it
            p2.close();
            ctx.synchronize();
            ctx.reap();
            assertArrayEquals(new long[] {3, 2, 4 * KIB}, counted(p), "a free made by retirement");
            p3.close(); // at close, in b's order
            q1.close();
            b.close();
            ctx.synchronize();
            ctx.reap(); // b drained: its ledger's counts for p go back to p
            assertArrayEquals(new long[] {3, 3, 0}, counted(p), "everything freed, counted once");
            assertArrayEquals(new long[] {1, 1, 0}, counted(q));
        }
        a.close();
        ctx.synchronize();
        ctx.reap();
        ctx.close();
    }

    /**
     * A pool's snapshot on one thread while another allocates from a second pool on the stream
     * whose ledger counts for the first (so the ledger hands the first pool's counts back),
     * switching at every step on the ledger and the fold: the first pool's counts do not change,
     * so every snapshot must read them exactly, never twice and never missing.
     */
    @Test
    void aSnapshotRacingTheLedgersHandoverCountsThePoolOnce(TestReporter reporter) {
        ScheduleExplorer.Report report = ScheduleExplorer.of("pool counters || ledger handover")
                .switchingAt(EnumSet.of(SwitchPoint.LEDGER, SwitchPoint.POOL_FOLD)).explore(() -> {
                    Interposer interposer = Interposer.over(new FakeDriverApi());
                    Simulated world = new Simulated(interposer);
                    CudaContext c = world.context();
                    Stream s = c.createStream();
                    MemoryPool p = c.createMemoryPool(MemoryPoolOptions.defaults());
                    MemoryPool q = c.createMemoryPool(MemoryPoolOptions.defaults());
                    DeviceBuffer kept = p.allocate(s, 3 * KIB);
                    p.allocate(s, KIB).close();
                    AtomicReference<long[]> seen = new AtomicReference<>();
                    AtomicReference<DeviceBuffer> other = new AtomicReference<>();
                    return ScheduleExplorer.Run.of(interposer, List.of(new Step("T1", () -> other.set(q.allocate(s,
                            KIB))), new Step("T2", () -> seen.set(counted(p)))), failures -> {
                                assertEquals(List.of(), failures.stream().filter(t -> t != null).toList(), "a step threw");
                                assertArrayEquals(new long[] {2, 1, 3 * KIB}, seen.get(), "the snapshot during the handover");
                                assertArrayEquals(new long[] {2, 1, 3 * KIB}, counted(p), "after it");
                            }, () -> {
                                kept.close();
                                other.get().close();
                                p.close();
                                q.close();
                                s.close();
                                c.synchronize();
                                c.reap();
                                c.close();
                            });
                });
        System.out.println("EXPLORED " + report);
        reporter.publishEntry("schedules", report.toString());
    }
}
