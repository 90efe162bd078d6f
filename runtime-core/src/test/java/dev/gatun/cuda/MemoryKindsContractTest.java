package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The one contract every kind of device memory keeps, run over each kind on the simulated
 * driver: a buffer used on two streams and then closed is freed only after the work queued on
 * both has run, and by exactly its own driver call (or none, for memory Gatun does not free),
 * once; its handle is closed from the close on. A new kind of memory gets a row here. (The
 * empty kind, a 0-byte buffer, has no memory a stream could use: {@code DeviceBufferTest} covers it.)
 */
class MemoryKindsContractTest {

    private static final String[] FREES = {"cuMemFree_v2", "cuMemFreeAsync", "cuIpcCloseMemHandle", "cuMemUnmap"};

    /** Each kind: how to make a 256-byte buffer of it, and the driver call that frees it (null: none). */
    enum Kind {
        POOLED_BLOCK(t -> t.ctx.allocate(256), "cuMemFree_v2"),
        STREAM_ORDERED(t -> t.ctx.computeStream().allocate(256), "cuMemFreeAsync"),
        POOL_ALLOCATION(t -> t.pool().allocate(t.ctx.computeStream(), 256), "cuMemFreeAsync"),
        BORROWED(t -> DeviceBuffer.borrow(t.ctx, t.sim.gpu.foreignDeviceMemory(t.primary(), 256), 256), null),
        IPC_MAPPING(t -> DeviceBuffer.importFrom(t.ctx, t.exported()), "cuIpcCloseMemHandle"),
        IPC_POOL_MAPPING(MemoryKindsContractTest::importedPoolAllocation, "cuMemFree_v2"),
        GROWABLE_VIEW(t -> t.growable().mapped(), null),
        GRAPH_ALLOCATION(MemoryKindsContractTest::launchedGraphAllocation, "cuMemFreeAsync"),
        ARENA_BLOCK(MemoryKindsContractTest::arenaBlock, null);

        final Function<MemoryKindsContractTest, DeviceBuffer> make;
        final String free;

        Kind(Function<MemoryKindsContractTest, DeviceBuffer> make, String free) {
            this.make = make;
            this.free = free;
        }
    }

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    /** What a kind's setup opened besides the buffer, closed last. */
    private final List<AutoCloseable> setup = new ArrayList<>();

    @AfterEach
    void nothingLeft() throws Exception {
        for (int i = setup.size() - 1; i >= 0; i--) {
            setup.get(i).close();
        }
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aBufferUsedOnTwoStreamsIsFreedOnlyAfterBothByItsOwnDriverCallOnce(Kind kind) {
        try (Stream first = ctx.createStream(); Stream second = ctx.createStream()) {
            DeviceBuffer b = kind.make.apply(this);
            HeldStreams.hold(sim, first);
            HeldStreams.hold(sim, second);
            first.memset(b.bytes(), (byte) 1);
            second.memset(b.bytes(), (byte) 2);
            sim.faults.countCalls();
            b.close();
            assertTrue(b.isClosed());
            assertThrows(IllegalStateException.class, b::address, "a closed handle stays closed");
            ctx.reap();
            assertEquals(Map.of(), frees(), kind + ": nothing freed while both streams' work is queued");
            HeldStreams.release(sim, first);
            ctx.reap();
            assertEquals(Map.of(), frees(), kind + ": nothing freed while the second stream's work is queued");
            HeldStreams.release(sim, second);
            ctx.reap();
            assertEquals(kind.free == null ? Map.of() : Map.of(kind.free, 1), frees(),
                    kind + ": freed after both, by its own call, once");
            b.close(); // idempotent
            ctx.reap();
            assertEquals(kind.free == null ? Map.of() : Map.of(kind.free, 1), frees(), kind + ": never freed twice");
        }
    }

    /** The free calls made since {@code countCalls()}, by name (those made at least once). */
    private Map<String, Integer> frees() {
        Map<String, Integer> made = new java.util.TreeMap<>();
        for (String f : FREES) {
            int n = sim.faults.calls(f);
            if (n > 0) {
                made.put(f, n);
            }
        }
        return made;
    }

    private <T extends AutoCloseable> T opened(T owner) {
        setup.add(owner);
        return owner;
    }

    private MemorySegment primary() {
        return ctx.state().handle();
    }

    private MemoryPool pool() {
        return opened(ctx.createMemoryPool(MemoryPoolOptions.defaults()));
    }

    private GrowableBuffer growable() {
        GrowableBuffer g = opened(ctx.reserveGrowable(GrowableBufferOptions.defaults().withMaxBytes(16L << 20)));
        g.grow(256);
        return g;
    }

    /** A legacy IPC export of a buffer of this process (the simulator maps it again, as another process would). */
    private IpcBufferExport exported() {
        DeviceBuffer original = opened(ctx.allocate(256));
        return original.exportForIpc();
    }

    private static DeviceBuffer importedPoolAllocation(MemoryKindsContractTest t) {
        MemoryPool pool = t.opened(t.ctx.createMemoryPool(
                MemoryPoolOptions.defaults().withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR)));
        MemoryPool imported = t.opened(MemoryPool.importFrom(t.ctx, pool.exportFileDescriptor()));
        DeviceBuffer original = t.opened(pool.allocate(t.ctx.computeStream(), 256));
        IpcBufferExport export = original.exportForIpc();
        return imported.importAllocation(export);
    }

    /** The output of a capture into an arena, left open at its end (the graph closed): the arena's memory. */
    private static DeviceBuffer arenaBlock(MemoryKindsContractTest t) {
        CaptureArena arena = t.opened(CaptureArena.reserve(t.ctx, 4L << 20));
        arena.ensure(256);
        Stream s = t.opened(t.ctx.createStream());
        try (StreamCapture capture = arena.beginCapture(s, CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer out = s.allocate(256);
            capture.end().close();
            return out;
        }
    }

    /** The output of a graph whose capture allocated it, after one launch: backed, the graph's until closed. */
    private static DeviceBuffer launchedGraphAllocation(MemoryKindsContractTest t) {
        Stream s = t.opened(t.ctx.createStream());
        DeviceBuffer out;
        Graph graph;
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            out = s.allocate(256);
            s.memset(out.bytes(), (byte) 0);
            graph = capture.end();
        }
        GraphExec exec = graph.instantiate();
        exec.launch(s);
        s.synchronize();
        exec.close();
        graph.close(); // the buffer is the graph's allocation: freed once closed, after its last uses
        t.ctx.reap();
        return out;
    }
}
