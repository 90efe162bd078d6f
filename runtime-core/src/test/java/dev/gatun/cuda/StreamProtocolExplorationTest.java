package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.ScheduleExplorer;
import dev.gatun.cuda.testing.ScheduleExplorer.Step;
import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Every order of the driver calls of two or three threads (within two preemptions) for each
 * pair of operations the stream protocol must keep apart, on the simulated driver, with
 * {@link ScheduleExplorer}: each schedule runs the pair on a fresh context and then asserts the
 * invariants (no stale read, no simulator violation, nothing freed that a graph or queued work
 * still uses, a record's capture told right). The deterministic tests in
 * {@link StreamProtocolInterleavingTest} and {@link SyncOrderingInterleavingTest} force one order
 * each; these search for any.
 */
class StreamProtocolExplorationTest {

    private static final int N = 4;
    private static final long MIB = 1 << 20;
    /**
     * Where the three-thread scenarios of synchronous ordering switch besides driver calls: at the
     * "unordered" flag they race on. At every switch point they make more orders than the
     * explorer's limit of 2,000; at the flag's, every order within the bound runs (1,410 and 794).
     */
    private static final Set<SwitchPoint> SYNC_ORDERING = EnumSet.of(SwitchPoint.UNORDERED_SET,
            SwitchPoint.UNORDERED_TAKE);

    /** Where the capture gate's scenarios switch besides driver calls: its lock-free counts and reads. */
    private static final Set<SwitchPoint> GATE = EnumSet.of(SwitchPoint.GATE_SECTION_COUNT,
            SwitchPoint.CAPTURE_FAST_READ, SwitchPoint.GATE_CAPTURE_COUNT, SwitchPoint.GATE_SECTIONS_READ,
            SwitchPoint.GATE_DRAIN);

    /**
     * One schedule's world: a fresh simulated GPU behind an interposer, a context and a stream.
     * What it {@linkplain #own owns} is closed after the run, and then the context, which refuses
     * while an owner made from it is open: a run leaks nothing, or fails.
     */
    private static final class World {
        private final List<AutoCloseable> owned = new ArrayList<>();
        final Interposer interposer = Interposer.over(new FakeDriverApi());
        final Simulated sim = new Simulated(interposer);
        final CudaContext ctx = sim.context();
        final Stream s = own(ctx.createStream());

        /** Closes {@code owner} after the run (owners close idempotently, so a check may close it first). */
        <T extends AutoCloseable> T own(T owner) {
            owned.add(owner);
            return owner;
        }

        /** Loads {@code add(p, n, v)} (p[i] += v) as module "m" and prepares it on {@code v}. */
        KernelLaunch addInto(DeviceBuffer v) {
            sim.gpu.kernelBody("add", FakeKernel.ADD);
            ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
            Kernel add = own(ctx.modules().kernel("m", "add"));
            return add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N), KernelArg.i32(1));
        }

        void close() throws Exception {
            for (int i = owned.size() - 1; i >= 0; i--) {
                owned.get(i).close();
            }
            ctx.synchronize();
            ctx.close();
        }

        /** A run of {@code steps}, checked by {@code check}, with the context closed after it. */
        ScheduleExplorer.Run run(List<Step> steps, ScheduleExplorer.Check check) {
            return ScheduleExplorer.Run.of(interposer, steps, failures -> {
                check.check(failures);
                assertEquals(List.of(), sim.gpu.violations(), "the simulated driver saw misuse");
            }, this::close);
        }
    }

    /** Fails with the first step's throwable when any step threw. */
    private static void noneThrew(List<Throwable> failures) {
        for (Throwable t : failures) {
            if (t != null) {
                throw new AssertionError("a step threw " + t, t);
            }
        }
    }

    /** Publishes what the exploration covered, and prints it: the schedules and time of each scenario are reported numbers. */
    static void report(TestReporter reporter, ScheduleExplorer.Report report) {
        reporter.publishEntry("schedules", report.toString());
        System.out.println("EXPLORED " + report);
    }

    @Test
    @Tag("protocol-fix")
    void submitAndCaptureBegin(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("launch || capture begin").explore(() -> {
            World w = new World();
            DeviceBuffer v = w.own(w.ctx.allocate(4L * N));
            v.asInts().copyFrom(new int[N]);
            KernelLaunch launch = w.addInto(v);
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> launch.launch(w.s)),
                    new Step("T2", () -> capture.set(w.s.beginCapture(CaptureMode.RELAXED)))), failures -> {
                        noneThrew(failures);
                        try (Graph graph = capture.get().end()) {
                            v.close();
                            w.ctx.reap();
                            assertEquals(List.of(), w.sim.gpu.danglingGraphUses(), "the graph names a freed buffer");
                            try (GraphExec exec = graph.instantiate()) {
                                exec.launch(w.s);
                            }
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    /** This round's new submission (a stream memory operation) keeps the protocol of a launch. */
    @Test
    void memoryOperationAndCaptureBegin(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("memOps write || capture begin").explore(() -> {
            World w = new World();
            DeviceBuffer v = w.own(w.ctx.allocate(4L * N));
            v.asInts().copyFrom(new int[N]);
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> w.s.memOps().write32(v.asInts().slice(0, 1), 7, WriteFlag.DEFAULT)),
                    new Step("T2", () -> capture.set(w.s.beginCapture(CaptureMode.RELAXED)))), failures -> {
                        noneThrew(failures);
                        try (Graph graph = capture.get().end()) {
                            v.close();
                            w.ctx.reap();
                            assertEquals(List.of(), w.sim.gpu.danglingGraphUses(), "the graph names a freed buffer");
                            try (GraphExec exec = graph.instantiate()) {
                                exec.launch(w.s);
                            }
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    /**
     * A batch of copies, which has no graph node, is either queued before a capture begun
     * meanwhile or refused with its copies kept: never recorded into the graph.
     */
    @Test
    void copyBatchAndCaptureBegin(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("copy batch || capture begin").explore(() -> {
            World w = new World();
            DeviceBuffer d = w.own(w.ctx.allocate(4L * N));
            PinnedBuffer p = w.own(w.ctx.allocatePinned(4L * N));
            CopyBatch batch = w.own(CopyBatch.create(1));
            batch.upload(d.bytes(), p, 0);
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> batch.submit(w.s)),
                    new Step("T2", () -> capture.set(w.s.beginCapture(CaptureMode.RELAXED)))), failures -> {
                        assertEquals(null, failures.get(1), "the capture began");
                        if (failures.get(0) != null) {
                            assertInstanceOf(CaptureActiveException.class, failures.get(0), "refused as a capture's");
                            assertEquals(1, batch.size(), "a refused batch keeps its copies");
                        } else {
                            assertEquals(0, batch.size(), "a queued batch is emptied");
                        }
                        try (Graph graph = capture.get().end()) {
                            assertEquals(List.of(), graph.nodes(), "the batch went into the graph");
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    /**
     * A download into a pinned buffer whose last transfer is still queued on another (busy) stream,
     * racing a capture begun on the download's stream: queued before the capture, it follows that
     * transfer on the GPU; captured, it becomes a copy node that nothing on the GPU orders after
     * it, so the host waited for it first. Either way a read after the graph's launch returns the
     * download's bytes, never the older transfer's landing last.
     */
    @Test
    void pinnedDownloadBehindAnotherStreamAndCaptureBegin(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("pinned download behind another stream || capture begin").explore(() -> {
            World w = new World();
            Stream other = w.own(w.ctx.createStream());
            PinnedBuffer p = w.own(w.ctx.allocatePinned(Integer.BYTES));
            DeviceBuffer one = w.own(w.ctx.allocate(Integer.BYTES));
            DeviceBuffer two = w.own(w.ctx.allocate(Integer.BYTES));
            one.asInts().copyFrom(new int[] {1});
            two.asInts().copyFrom(new int[] {2});
            HeldStreams.hold(w.sim, other);
            other.download(p, 0, one.bytes()); // queued behind the busy GPU
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> w.s.download(p, 0, two.bytes())),
                    new Step("T2", () -> capture.set(w.s.beginCapture(CaptureMode.RELAXED)))), failures -> {
                        noneThrew(failures);
                        try (Graph graph = capture.get().end()) {
                            boolean captured = !graph.nodes().isEmpty();
                            if (captured) {
                                assertEquals(0, w.sim.gpu.queuedOperations(other.state().handle()),
                                        "captured before the transfer on the other stream completed");
                                try (GraphExec exec = graph.instantiate()) {
                                    exec.launch(w.s);
                                }
                            }
                            HeldStreams.release(w.sim, other);
                            assertEquals(2, p.segment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0),
                                    (captured ? "captured" : "queued") + ": the older transfer landed last");
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void submitAndCaptureEnd(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("launch || capture end").explore(() -> {
            World w = new World();
            DeviceBuffer v = w.own(w.ctx.allocate(4L * N));
            v.asInts().copyFrom(new int[N]);
            KernelLaunch launch = w.addInto(v);
            StreamCapture capture = w.s.beginCapture(CaptureMode.RELAXED);
            AtomicReference<Graph> graph = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> launch.launch(w.s)), new Step("T2", () -> graph.set(capture.end()))),
                    failures -> {
                        noneThrew(failures);
                        v.close();
                        w.ctx.reap();
                        assertEquals(List.of(), w.sim.gpu.danglingGraphUses(), "the graph names a freed buffer");
                        try (Graph g = graph.get(); GraphExec exec = g.instantiate()) {
                            exec.launch(w.s);
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void twoSynchronousReadsAndASubmission(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("sync read || sync read || fill").switchingAt(SYNC_ORDERING).explore(() -> {
            World w = new World();
            DeviceBuffer b = w.own(w.ctx.allocate(16));
            DeviceBuffer c = w.own(w.ctx.allocate(16));
            b.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            HeldStreams.hold(w.sim, w.s); // the fill stays queued until a host wait needs it
            AtomicBoolean fillReturned = new AtomicBoolean();
            AtomicBoolean readAfterFill = new AtomicBoolean();
            int[] out = new int[N];
            int[] other = new int[N];
            return w.run(List.of(new Step("T1", () -> c.asInts().copyTo(other)),
                    new Step("T2", () -> {
                        readAfterFill.set(fillReturned.get());
                        b.asInts().copyTo(out);
                    }),
                    new Step("T3", () -> {
                        w.s.fill(b.asInts(), 7);
                        fillReturned.set(true);
                    })), failures -> {
                        noneThrew(failures);
                        if (readAfterFill.get()) {
                            assertArrayEquals(new int[] {7, 7, 7, 7}, out, "a read begun after the fill returned read "
                                    + "stale data");
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void streamCloseAndASubmissionOnIt(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("stream close || fill on it").explore(() -> {
            World w = new World();
            Stream x = w.own(w.ctx.createStream());
            DeviceBuffer b = w.own(w.ctx.allocate(16));
            HeldStreams.hold(w.sim, x);
            return w.run(List.of(new Step("T1", () -> x.fill(b.asInts(), 7)), new Step("T2", x::close)), failures -> {
                if (failures.get(0) != null) {
                    assertInstanceOf(IllegalStateException.class, failures.get(0), "refused as a use of a closed stream");
                }
                assertEquals(null, failures.get(1), "the close threw");
                b.close();
                w.sim.gpu.advance(x.state().handle(), 1); // what was queued first on x runs, not what came after
                w.ctx.reap();
                assertEquals(List.of(), w.sim.gpu.violations(), "freed under the queued fill");
                w.ctx.synchronize();
            });
        }));
    }

    @Test
    void bufferCloseAndAUseOnAnotherStream(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("buffer close || fill of it on another stream").explore(() -> {
            World w = new World();
            Stream y = w.own(w.ctx.createStream());
            DeviceBuffer b = w.own(w.ctx.allocate(16));
            w.s.fill(b.asInts(), 1); // used on s before: its close fences s
            HeldStreams.hold(w.sim, y);
            return w.run(List.of(new Step("T1", b::close), new Step("T2", () -> y.fill(b.asInts(), 7))), failures -> {
                assertEquals(null, failures.get(0), "the close threw");
                if (failures.get(1) != null) {
                    assertInstanceOf(IllegalStateException.class, failures.get(1), "refused as a use of a closed buffer");
                }
                assertEquals(List.of(), w.sim.gpu.violations(), "the buffer was freed under the fill queued on y");
                w.ctx.synchronize();
            });
        }));
    }

    /**
     * A launch on one stream racing the close of its buffer, a stream-ordered allocation made on
     * another stream and used nowhere else (review 2026-12-06, section 3.1): no driver call falls
     * between the launch's admission and the close's free, so only the switch points (a use
     * listing its stream, a close reading the list) let the explorer see the window.
     */
    @Test
    void launchAndTheCloseOfItsBufferOnAnotherStream(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("launch on s1 || close of its buffer made on s2").explore(() -> {
            World w = new World();
            Stream s2 = w.own(w.ctx.createStream());
            DeviceBuffer b = w.own(s2.allocate(4L * N));
            KernelLaunch launch = w.addInto(b);
            w.ctx.synchronize();
            return w.run(List.of(new Step("T1", () -> launch.launch(w.s)), new Step("T2", b::close)), failures -> {
                if (failures.get(0) != null) {
                    assertInstanceOf(IllegalStateException.class, failures.get(0), "refused as a use of a closed buffer");
                }
                assertEquals(null, failures.get(1), "the close threw");
                w.ctx.synchronize(); // runs the launch: the simulator flags it if its buffer was freed first
            });
        }));
    }

    /**
     * Work queued on S, then a capture begun on S, while another thread reads synchronously
     * (review 2026-12-06, section 3.3): the read must wait for that work through the fence S took
     * as its capture began, since nothing can be recorded on S while it captures.
     */
    @Test
    void aSynchronousReadAndWorkQueuedBeforeACaptureBegins(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("fill, capture begin || sync read").explore(() -> {
            World w = new World();
            DeviceBuffer b = w.own(w.ctx.allocate(16));
            b.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            HeldStreams.hold(w.sim, w.s); // the fill stays queued until a host wait needs it
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            AtomicBoolean readAfterCaptureBegan = new AtomicBoolean();
            int[] out = new int[N];
            return w.run(List.of(new Step("T1", () -> {
                w.s.fill(b.asInts(), 7);
                capture.set(w.s.beginCapture(CaptureMode.RELAXED));
            }), new Step("T2", () -> {
                readAfterCaptureBegan.set(capture.get() != null);
                b.asInts().copyTo(out);
            })), failures -> {
                noneThrew(failures);
                if (readAfterCaptureBegan.get()) {
                    assertArrayEquals(new int[] {7, 7, 7, 7}, out, "a read begun after the capture began skipped the "
                            + "fill queued before it: " + Arrays.toString(out));
                }
                capture.get().end().close();
                HeldStreams.release(w.sim, w.s);
                w.ctx.synchronize();
            });
        }));
    }

    /** As {@link #aSynchronousReadAndWorkQueuedBeforeACaptureBegins}, with a shrink that unmaps the chunk the fill writes. */
    @Test
    void aShrinkAndWorkQueuedBeforeACaptureBegins(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("fill, capture begin || shrink").explore(() -> {
            World w = new World();
            GrowableBuffer g = w.own(w.ctx.reserveGrowable(16 * MIB));
            g.grow(4 * MIB);
            DeviceView chunk = g.mapped().asInts().slice(3 * MIB / 4, 16); // in the second 2 MiB chunk
            HeldStreams.hold(w.sim, w.s);
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> {
                w.s.fill(chunk, 7);
                capture.set(w.s.beginCapture(CaptureMode.RELAXED));
            }), new Step("T2", () -> g.shrink(2 * MIB))), failures -> {
                if (failures.get(0) != null) {
                    assertInstanceOf(IllegalStateException.class, failures.get(0), "refused: the view is closed");
                }
                assertEquals(null, failures.get(1), "the shrink threw");
                assertEquals(List.of(), w.sim.gpu.violations(), "unmapped under the fill queued before the capture");
                if (capture.get() != null) {
                    capture.get().end().close();
                }
                HeldStreams.release(w.sim, w.s);
                w.ctx.synchronize();
            });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void allocationAndCaptureBegin(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("allocate || capture begin").explore(() -> {
            World w = new World();
            AtomicReference<DeviceBuffer> buffer = new AtomicReference<>();
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> buffer.set(w.s.allocate(256))),
                    new Step("T2", () -> capture.set(w.s.beginCapture(CaptureMode.RELAXED)))), failures -> {
                        noneThrew(failures);
                        DeviceBuffer b = buffer.get();
                        try (Graph graph = capture.get().end()) {
                            boolean node = w.sim.gpu.isGraphAllocation(b.address());
                            assertEquals(node, b.isGraphAllocation(), b + " is classified apart from what the driver "
                                    + "made (an allocation node: " + node + ")");
                            if (node) {
                                assertTrue(graph.allocations().contains(b), "a graph allocation its graph does not list");
                            }
                            b.close();
                        }
                        w.ctx.synchronize();
                    });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void recordAndCaptureEnd(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("event record || capture end").explore(() -> {
            World w = new World();
            StreamCapture capture = w.s.beginCapture(CaptureMode.RELAXED);
            Event e = w.own(w.ctx.createEvent());
            AtomicReference<Graph> graph = new AtomicReference<>();
            return w.run(List.of(new Step("T1", () -> e.record(w.s)), new Step("T2", () -> graph.set(capture.end()))),
                    failures -> {
                        noneThrew(failures);
                        graph.get().close();
                        if (w.sim.gpu.lastRecordCaptured(e.handle())) {
                            assertThrows(CaptureActiveException.class, e::onComplete, "a completion was accepted for a "
                                    + "record that went into the graph");
                        } else {
                            CompletableFuture<Void> done = e.onComplete();
                            w.ctx.synchronize();
                            done.get(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS); // a deadlock guard
                        }
                        e.close();
                    });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void retirementFreeAndACaptureOfTheCopyStream(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("retirement free || capture of the copy stream").explore(() -> {
            World w = new World();
            Stream other = w.own(w.ctx.createStream());
            DeviceBuffer b = w.own(w.s.allocate(256));
            other.memset(b.bytes(), (byte) 0); // used on two streams: freed after both fences
            AtomicReference<StreamCapture> capture = new AtomicReference<>();
            return w.run(List.of(new Step("T1", b::close),
                    new Step("T2", () -> capture.set(w.ctx.copyStream().beginCapture(CaptureMode.RELAXED)))),
                    failures -> {
                        noneThrew(failures);
                        capture.get().end().close();
                        other.close();
                        w.ctx.synchronize();
                        assertEquals(0, w.sim.gpu.liveDeviceAllocations(), "the buffer's memory outlived its close, "
                                + "the capture and ctx.synchronize()");
                        assertEquals(0, w.ctx.diagnostics().counters().liveBytes(), "Gatun's count of live bytes");
                    });
        }));
    }

    @Test
    @Tag("protocol-fix")
    void shrinkASynchronousCopyAndASubmission(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("shrink || sync copy || fill").switchingAt(SYNC_ORDERING).explore(() -> {
            World w = new World();
            GrowableBuffer g = w.own(w.ctx.reserveGrowable(16 * MIB));
            g.grow(4 * MIB);
            DeviceView chunk = g.mapped().asInts().slice(3 * MIB / 4, 16); // in the second 2 MiB chunk
            DeviceBuffer c = w.own(w.ctx.allocate(16));
            HeldStreams.hold(w.sim, w.s);
            return w.run(List.of(new Step("T1", () -> g.shrink(2 * MIB)),
                    new Step("T2", () -> c.asInts().copyFrom(new int[N])),
                    new Step("T3", () -> w.s.fill(chunk, 7))), failures -> {
                        assertEquals(null, failures.get(0), "the shrink threw");
                        assertEquals(null, failures.get(1), "the copy threw");
                        if (failures.get(2) != null) {
                            assertInstanceOf(IllegalStateException.class, failures.get(2), "refused: the view is closed");
                        }
                        assertEquals(List.of(), w.sim.gpu.violations(), "unmapped under the queued fill");
                        w.ctx.synchronize();
                        g.close();
                    });
        }));
    }

    /**
     * The capture gate without its lock on the common path: a synchronous allocation and its free
     * at close (cuMemAlloc and cuMemFree, each in a section that counts itself in with one atomic
     * step) racing a global-mode capture begun and ended on another thread, switching at the
     * gate's counts and reads. The simulated driver records a violation for a cuMemAlloc or
     * cuMemFree made while a global capture is open; a free the gate kept out is freed at the
     * reap after it.
     */
    @Test
    @Tag("protocol-fix")
    void synchronousAllocateAndFreeAndAGlobalCapture(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("allocate + close (pool off) || global capture").switchingAt(GATE)
                .explore(() -> {
                    World w = new World();
                    int before = w.sim.gpu.liveDeviceAllocations();
                    return w.run(List.of(new Step("T1", () -> w.ctx.allocate(256).close()),
                            new Step("T2", () -> w.s.beginCapture(CaptureMode.GLOBAL).end().close())), failures -> {
                                noneThrew(failures);
                                w.ctx.reap();
                                assertEquals(before, w.sim.gpu.liveDeviceAllocations(), "the buffer was never freed");
                            });
                }));
    }

    /**
     * Two sections (a synchronous allocation with its free, and a retirement's free) against a
     * global capture: the capture withdraws its count while either is inside and tries again once
     * both drained; neither section is let in under it.
     */
    @Test
    @Tag("protocol-fix")
    void twoSynchronizingSectionsAndAGlobalCapture(TestReporter reporter) {
        report(reporter, ScheduleExplorer.of("allocate || close || global capture").switchingAt(GATE).preemptions(1)
                .explore(() -> {
                    World w = new World();
                    int before = w.sim.gpu.liveDeviceAllocations();
                    DeviceBuffer b = w.ctx.allocate(256);
                    AtomicReference<DeviceBuffer> made = new AtomicReference<>();
                    return w.run(List.of(new Step("T1", () -> made.set(w.ctx.allocate(256))), new Step("T2", b::close),
                            new Step("T3", () -> w.s.beginCapture(CaptureMode.GLOBAL).end().close())), failures -> {
                                noneThrew(failures);
                                made.get().close();
                                w.ctx.reap();
                                assertEquals(before, w.sim.gpu.liveDeviceAllocations(), "a buffer was never freed");
                            });
                }));
    }
}
