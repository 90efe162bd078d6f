package dev.gatun.cuda;

import static dev.gatun.cuda.AddKernelFixture.filled;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Work captured on every run and replayed through the update policy; an invalidated capture runs eagerly once. */
class CapturedWorkTest {

    private static final int N = AddKernelFixture.N;

    private final AddKernelFixture f = new AddKernelFixture(new FakeDriverApi());
    private final Simulated sim = f.sim;
    private final CudaContext ctx = f.ctx;
    private final Stream stream = f.stream;
    private final DeviceBuffer data = ctx.allocate(4L * N);
    private final Kernel add = f.add;

    @AfterEach
    void nothingLeftOrMisused() {
        data.close();
        f.close();
        assertEquals(0, sim.gpu.liveReservations());
    }

    private int[] read() {
        return AddKernelFixture.read(data);
    }

    /** data += v, with a scratch buffer allocated, written and freed on the way (arena or graph memory). */
    private void work(Stream s, int v) {
        DeviceBuffer t = s.allocate(4L * N);
        s.fill(t.asInts(), 0);
        add.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(t), KernelArg.i32(N), KernelArg.i32(v));
        add.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(data), KernelArg.i32(N), KernelArg.i32(v));
        t.close();
    }

    @Test
    void eachRunIsCapturedAndReplayedAndAnInvalidatedOneRunsEagerlyOnce() {
        try (CaptureArena arena = CaptureArena.reserve(ctx, 4L << 20); CapturedWork w = CapturedWork.of(CaptureMode.THREAD_LOCAL, arena)) {
            arena.ensure(4096);
            data.asInts().copyFrom(new int[N]);
            w.run(stream, s -> work(s, 1));
            w.run(stream, s -> work(s, 2));
            assertArrayEquals(filled(3), read());
            // The next capture is invalidated (as by a forbidden call during it): the work runs eagerly.
            int[] calls = {0};
            w.run(stream, s -> {
                work(s, 4);
                if (calls[0]++ == 0) { // the captured call only; the eager one runs as is
                    sim.gpu.invalidateCapture(s.state().handle());
                }
            });
            assertEquals(2, calls[0], "captured, then run once eagerly");
            assertArrayEquals(filled(7), read(), "the invalidated run's work was done once, eagerly");
            w.run(stream, s -> work(s, 8));
            assertArrayEquals(filled(15), read());
            assertEquals(3, w.captures());
            assertEquals(1, w.eagerRuns());
            assertEquals(2, w.installCounters().updates(), "the same shape each time: updates in place");
            assertEquals(1, w.installCounters().instantiations());
        }
    }

    @Test
    void withoutAnArenaTheWorksGraphMemoryIsInstantiatedEachTimeAndAClosedOneRefuses() {
        CapturedWork w = CapturedWork.of(CaptureMode.THREAD_LOCAL);
        data.asInts().copyFrom(new int[N]);
        w.run(stream, s -> work(s, 1));
        w.run(stream, s -> work(s, 2));
        assertArrayEquals(filled(3), read());
        assertEquals(2, w.installCounters().instantiations(), "memory nodes: each graph is instantiated");
        w.close();
        assertThrows(IllegalStateException.class, () -> w.run(stream, s -> work(s, 1)));
    }
}
