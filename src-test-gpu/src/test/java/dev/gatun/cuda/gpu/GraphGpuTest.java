package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.graph.GraphSlot;
import dev.gatun.cuda.graph.LatchFlags;
import dev.gatun.cuda.graph.ValidationLatch;
import dev.gatun.cuda.graph.ValidationRecipient;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/** Captured graphs on the H200, checked against the CPU on random inputs. */
@RequiresGpu
class GraphGpuTest {

    private static final int STAGES = 20;

    /** stage k: y = y * (2k + 3) + (x ^ k) (stage 0 starts from y = x), in wrapping 32-bit integers. */
    private static String pipelineSource() {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < STAGES; k++) {
            sb.append("extern \"C\" __global__ void stage").append(k).append("(unsigned int* y, const unsigned int* x, int n) {\n")
                    .append("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n")
                    .append("    if (i < n) y[i] = ").append(k == 0 ? "x[i]" : "y[i]").append(" * ").append(2 * k + 3)
                    .append("u + (x[i] ^ ").append(k).append("u);\n}\n");
        }
        return sb.toString();
    }

    private static int[] cpuPipeline(int[] x) {
        int[] y = new int[x.length];
        for (int k = 0; k < STAGES; k++) {
            for (int i = 0; i < x.length; i++) {
                y[i] = (k == 0 ? x[i] : y[i]) * (2 * k + 3) + (x[i] ^ k);
            }
        }
        return y;
    }

    @Test
    void aTwentyKernelPipelineReplayedAThousandTimesMatchesTheCpuEachTime() {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        int n = 4099;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        NvrtcLibrary.system().compiler().load(ctx.modules(), "pipeline", pipelineSource(), CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())));
        Stream s = ctx.createStream();
        List<Kernel> kernels = new ArrayList<>();
        try (DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
            for (int k = 0; k < STAGES; k++) {
                kernels.add(ctx.modules().kernel("pipeline", "stage" + k));
            }
            GraphSlot slot = graphs.registerGroup("pipeline").slot("forward");
            slot.beginCapture(s, CaptureMode.GLOBAL, List.of(x, y)); // only these may be baked in
            for (Kernel k : kernels) {
                k.launch(s, LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x), KernelArg.i32(n));
            }
            slot.endCapture();
            int[] hostX = new int[n];
            int[] out = new int[n];
            // A thousand; a tenth under a sanitizer (20,000 instrumented kernels outlast a test's bound under racecheck).
            int replays = Gpu.sanitizer().isPresent() ? 100 : 1000;
            for (int replay = 0; replay < replays; replay++) {
                for (int i = 0; i < n; i++) {
                    hostX[i] = r.nextInt();
                }
                x.asInts().copyFrom(hostX); // refreshed through the registered buffer
                s.fill(y.asInts(), 0xDEADBEEF);
                slot.replay(s);
                Arrays.fill(out, 0x5A5A5A5A);
                y.asInts().copyTo(out);
                assertArrayEquals(cpuPipeline(hostX), out, "replay " + replay + " seed=" + seed);
            }
            assertEquals(replays, slot.counters().replays());
            slot.reset();
        } finally {
            graphs.close();
            kernels.forEach(Kernel::close);
            ctx.modules().unload("pipeline");
            s.close();
        }
    }

    @Test
    void aReplayAfterTheModuleNameWasReplacedRunsTheOldImage() {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        String source = "extern \"C\" __global__ void version(int* out) { *out = VERSION; }";
        CompileTarget target = CompileTarget.ptx(ctx.device().capabilities());
        NvrtcLibrary.system().compiler().load(ctx.modules(), "graph-versioned", source, CompileOptions.builder(target).options("-DVERSION=1").build(), "version");
        Stream s = ctx.createStream();
        try (DeviceBuffer out = ctx.allocate(4)) {
            GraphSlot slot = graphs.registerGroup("versioned").slot("v");
            try (Kernel v1 = ctx.modules().kernel("graph-versioned", "version")) {
                slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
                v1.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(out));
                slot.endCapture();
            }
            NvrtcLibrary.system().compiler().load(ctx.modules(), "graph-versioned", source, CompileOptions.builder(target).options("-DVERSION=2").build(),
                    "version");
            s.fill(out.asInts(), -1);
            slot.replay(s);
            int[] got = new int[1];
            out.asInts().copyTo(got);
            assertEquals(1, got[0], "the graph still runs the image it captured");
            try (Kernel v2 = ctx.modules().kernel("graph-versioned", "version")) {
                v2.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(out));
                out.asInts().copyTo(got);
                assertEquals(2, got[0]);
            }
            slot.reset();
        } finally {
            graphs.close();
            ctx.modules().unload("graph-versioned");
            s.close();
        }
    }

    @Test
    @Tag(GpuTags.LARGE) // a 3 GiB kernel: minutes under compute-sanitizer
    void aBufferClosedAfterCaptureStaysAllocatedUntilTheGraphsLastLaunchCompletes() {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        long big = 3L << 30;
        Stream s = ctx.createStream();
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4)) {
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            GraphSlot slot = graphs.registerGroup("holder").slot("spin");
            DeviceBuffer buffer = ctx.allocate(big);
            slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
            spin.launch(s, LaunchConfig.of(132, 256), KernelArg.address(flag.segment().address()), KernelArg.pointer(buffer),
                    KernelArg.f32(3f), KernelArg.i64(big / 4));
            slot.endCapture();
            slot.replay(s);
            long freeBefore = ctx.diagnostics().memoryInfo().freeBytes();
            buffer.close();
            slot.reset(); // the executable goes to retirement; its replay is still running
            ctx.reap();
            assertTrue(ctx.diagnostics().memoryInfo().freeBytes() < freeBefore + big / 2, "still allocated while the replay runs");
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            s.synchronize();
            ctx.reap();
            ctx.reap();
            assertTrue(ctx.diagnostics().memoryInfo().freeBytes() > freeBefore + big / 2, "freed after the last launch completed");
        } finally {
            graphs.close();
            s.close();
        }
    }

    @Test
    void anOutOfRangeIndexInAReplayedGraphSetsTheLatchAndTheNextGenerationStartsClean() {
        String source = StressKernels.GATHER;
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        int n = 1000;
        int m = 64;
        Stream s = ctx.computeStream(); // the latch word is cleared in order on the compute stream
        NvrtcLibrary.system().compiler().load(ctx.modules(), "gather", source, CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities()))
                .includeDirectory(CudaGraphs.latchIncludeDirectory()).build(), "gather");
        try (Kernel gather = ctx.modules().kernel("gather", "gather"); DeviceBuffer index = ctx.allocate(4L * n);
                DeviceBuffer table = ctx.allocate(4L * m); DeviceBuffer out = ctx.allocate(4L * n)) {
            float[] t = new float[m];
            for (int i = 0; i < m; i++) {
                t[i] = i * 0.5f;
            }
            table.asFloats().copyFrom(t);
            int[] valid = new int[n];
            Random r = new Random(Gpu.seed());
            for (int i = 0; i < n; i++) {
                valid[i] = r.nextInt(m);
            }
            index.asInts().copyFrom(valid);
            GraphSlot slot = graphs.registerGroup("lookup").slot("gather");
            slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
            gather.launch(s, LaunchConfig.covering(n, 128), KernelArg.pointer(index), KernelArg.pointer(table),
                    KernelArg.pointer(out), KernelArg.i32(n), KernelArg.i32(m), KernelArg.pointer(graphs.latchWord()));
            slot.endCapture();
            ValidationLatch latch = graphs.latch();
            ValidationRecipient request = latch.register("request");

            long clean = latch.begin(request);
            latch.activate(request, clean);
            slot.replay(s);
            assertEquals(0, latch.consume(request, clean));
            float[] got = new float[n];
            out.asFloats().copyTo(got);
            for (int i = 0; i < n; i++) {
                assertEquals(t[valid[i]], got[i], "element " + i);
            }

            int[] bad = valid.clone();
            bad[417] = m + 5;
            index.asInts().copyFrom(bad);
            long flagged = latch.begin(request);
            latch.activate(request, flagged);
            slot.replay(s);
            assertEquals(LatchFlags.OUT_OF_RANGE, latch.consume(request, flagged) & LatchFlags.OUT_OF_RANGE);

            index.asInts().copyFrom(valid);
            slot.reset(); // a graph reset never clears the word; consuming does
            slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
            gather.launch(s, LaunchConfig.covering(n, 128), KernelArg.pointer(index), KernelArg.pointer(table),
                    KernelArg.pointer(out), KernelArg.i32(n), KernelArg.i32(m), KernelArg.pointer(graphs.latchWord()));
            slot.endCapture();
            long next = latch.begin(request);
            latch.activate(request, next);
            slot.replay(s);
            assertEquals(0, latch.consume(request, next), "the next generation starts clean");
            slot.reset();
            latch.unregister(request);
        } finally {
            graphs.close();
            ctx.modules().unload("gather");
        }
    }

    @Test
    void aSynchronizingCallOnAnotherThreadWaitsForAGlobalCaptureWhichStillSucceeds() throws Exception {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        Stream s = ctx.createStream();
        try (Kernel saxpyLike = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4);
                DeviceBuffer out = ctx.allocate(4 * 1024)) {
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1); // never waits: the kernel just fills
            GraphSlot slot = graphs.registerGroup("gate").slot("g");
            slot.beginCapture(s, CaptureMode.GLOBAL);
            // A fresh size class: a real cuMemAlloc, which would invalidate the capture if it ran now.
            CompletableFuture<DeviceBuffer> allocation = CompletableFuture.supplyAsync(() -> ctx.allocate((123L << 20) + 7));
            saxpyLike.launch(s, LaunchConfig.of(4, 256), KernelArg.address(flag.segment().address()), KernelArg.pointer(out),
                    KernelArg.f32(9f), KernelArg.i64(1024));
            assertFalse(allocation.isDone(), "the allocation waits for the capture");
            slot.endCapture();
            allocation.get().close();
            s.fill(out.asInts(), 0);
            slot.replay(s);
            float[] got = new float[1024];
            out.asFloats().copyTo(got);
            for (float f : got) {
                assertEquals(9f, f);
            }
            slot.reset();
        } finally {
            graphs.close();
            s.close();
        }
    }

    @Test
    void oneKernelNodesArgumentsAreUpdatedInPlace() {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        Stream s = ctx.createStream();
        try (Kernel set = Gpu.kernel("extern \"C\" __global__ void set(int* out, int v) { *out = v; }", "set");
                DeviceBuffer a = ctx.allocate(4); DeviceBuffer b = ctx.allocate(4); DeviceBuffer c = ctx.allocate(4)) {
            GraphSlot slot = graphs.registerGroup("nodes").slot("set");
            slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
            set.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(a), KernelArg.i32(1));
            set.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(b), KernelArg.i32(2));
            slot.endCapture();
            KernelLaunch moved = set.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(c), KernelArg.i32(7));
            slot.updateKernelArguments(0, 1, moved);
            for (DeviceBuffer d : new DeviceBuffer[] {a, b, c}) {
                s.fill(d.asInts(), -1);
            }
            slot.replay(s);
            int[] got = new int[1];
            a.asInts().copyTo(got);
            assertEquals(1, got[0], "the first node is unchanged");
            b.asInts().copyTo(got);
            assertEquals(-1, got[0], "the second node no longer writes b");
            c.asInts().copyTo(got);
            assertEquals(7, got[0], "it writes c with the new value");
            assertEquals(0, slot.counters().reinstantiations() + slot.counters().updatesInPlace(), "no re-capture at all");
            slot.reset();
        } finally {
            graphs.close();
            s.close();
        }
    }

    /** y = x * a + b, in wrapping 32-bit integers. */
    private static int[] cpuAffine(int[] x, int a, int b) {
        int[] y = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * a + b;
        }
        return y;
    }

    @Test
    void aKernelNodeIsUpdatedInPlaceAfterThreeSameShapeRecaptures() {
        String source = """
                extern "C" __global__ void affine(unsigned int* y, const unsigned int* x, unsigned int a,
                                                  unsigned int b, int n) {
                    int i = blockIdx.x * blockDim.x + threadIdx.x;
                    if (i < n) y[i] = x[i] * a + b;
                }
                """;
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        int n = 5003;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        int poison = 0xDEADBEEF;
        Stream s = ctx.createStream();
        try (Kernel affine = Gpu.kernel(source, "affine"); DeviceBuffer x = ctx.allocate(4L * n);
                DeviceBuffer y1 = ctx.allocate(4L * n); DeviceBuffer y2 = ctx.allocate(4L * n);
                DeviceBuffer y3 = ctx.allocate(4L * n)) {
            GraphSlot slot = graphs.registerGroup("recaptured-nodes").slot("affine");
            LaunchConfig config = LaunchConfig.covering(n, 128);
            slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
            affine.launch(s, config, KernelArg.pointer(y1), KernelArg.pointer(x), KernelArg.i32(3), KernelArg.i32(5),
                    KernelArg.i32(n));
            affine.launch(s, config, KernelArg.pointer(y2), KernelArg.pointer(x), KernelArg.i32(7), KernelArg.i32(11),
                    KernelArg.i32(n));
            slot.endCapture();
            int a1 = 0;
            int b1 = 0;
            for (int k = 1; k <= 3; k++) {
                a1 = r.nextInt() | 1;
                b1 = r.nextInt();
                slot.beginRecapture(0, s, CaptureMode.THREAD_LOCAL);
                affine.launch(s, config, KernelArg.pointer(y1), KernelArg.pointer(x), KernelArg.i32(a1),
                        KernelArg.i32(b1), KernelArg.i32(n));
                affine.launch(s, config, KernelArg.pointer(y2), KernelArg.pointer(x), KernelArg.i32(a1 + 2),
                        KernelArg.i32(b1 + 2), KernelArg.i32(n));
                slot.endCapture();
            }
            assertEquals(3, slot.counters().updatesInPlace(), "every re-capture updated the executable in place");
            assertEquals(0, slot.counters().reinstantiations());
            int a3 = r.nextInt() | 1;
            int b3 = r.nextInt();
            slot.updateKernelArguments(0, 1, affine.prepare(config, KernelArg.pointer(y3),
                    KernelArg.pointer(x), KernelArg.i32(a3), KernelArg.i32(b3), KernelArg.i32(n)));
            int[] hostX = new int[n];
            int[] out = new int[n];
            int[] poisoned = new int[n];
            Arrays.fill(poisoned, poison);
            for (int replay = 0; replay < 2; replay++) {
                for (int i = 0; i < n; i++) {
                    hostX[i] = r.nextInt();
                }
                x.asInts().copyFrom(hostX);
                for (DeviceBuffer d : new DeviceBuffer[] {y1, y2, y3}) {
                    s.fill(d.asInts(), poison);
                }
                slot.replay(s);
                Arrays.fill(out, 0x5A5A5A5A);
                y1.asInts().copyTo(out);
                assertArrayEquals(cpuAffine(hostX, a1, b1), out, "the first node runs the last capture; replay "
                        + replay + " seed=" + seed);
                Arrays.fill(out, 0x5A5A5A5A);
                y2.asInts().copyTo(out);
                assertArrayEquals(poisoned, out, "the updated node no longer writes y2; replay " + replay + " seed=" + seed);
                Arrays.fill(out, 0x5A5A5A5A);
                y3.asInts().copyTo(out);
                assertArrayEquals(cpuAffine(hostX, a3, b3), out, "the updated node writes y3 with its new scalars; "
                        + "replay " + replay + " seed=" + seed);
            }
            slot.reset();
        } finally {
            graphs.close();
            s.close();
        }
    }

    @Test
    void aSameShapeRecaptureUpdatesTheExecutableInPlace(TestReporter report) {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        NvrtcLibrary.system().compiler().load(ctx.modules(), "pipeline-u", pipelineSource(), CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())));
        Stream s = ctx.createStream();
        List<Kernel> kernels = new ArrayList<>();
        int n = 1024;
        try (DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
            for (int k = 0; k < STAGES; k++) {
                kernels.add(ctx.modules().kernel("pipeline-u", "stage" + k));
            }
            List<KernelLaunch> launches = new ArrayList<>();
            for (Kernel k : kernels) {
                launches.add(k.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x), KernelArg.i32(n)));
            }
            GraphSlot slot = graphs.registerGroup("update").slot("u");
            slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
            launches.forEach(l -> l.launch(s));
            slot.endCapture();
            int rounds = 50;
            long t0 = System.nanoTime();
            for (int i = 0; i < rounds; i++) {
                slot.beginRecapture(0, s, CaptureMode.THREAD_LOCAL);
                launches.forEach(l -> l.launch(s));
                slot.endCapture();
            }
            long updateNanos = System.nanoTime() - t0;
            long t1 = System.nanoTime();
            for (int i = 0; i < rounds; i++) {
                slot.beginRecapture(0, s, CaptureMode.THREAD_LOCAL);
                // A topology other than both the segment's and the spare's every time: three in turn.
                launches.subList(0, STAGES - 1 - (i % 3)).forEach(l -> l.launch(s));
                slot.endCapture();
            }
            long reinstantiateNanos = System.nanoTime() - t1;
            assertEquals(rounds, slot.counters().updatesInPlace(), "a same-shape re-capture is updated in place");
            assertEquals(rounds, slot.counters().reinstantiations(), "a changed topology is instantiated anew");
            assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, (long) rounds), slot.updateRefusals(),
                    "the driver said why each time");
            assertEquals(0, slot.counters().spareUpdates(), "the spare never has the new topology");
            assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, (long) rounds - 1), slot.spareUpdateRefusals(),
                    "the spare refused each time after the first, which had none");
            report.publishEntry("recapture", String.format(Locale.ROOT,
                    "20-kernel re-capture with update in place %.1f us, 17/18/19-kernel re-capture with re-instantiation %.1f us (mean of %d)",
                    updateNanos / 1e3 / rounds, reinstantiateNanos / 1e3 / rounds, rounds));
            int[] hostX = new int[n];
            Random r = new Random(Gpu.seed());
            for (int i = 0; i < n; i++) {
                hostX[i] = r.nextInt();
            }
            slot.beginRecapture(0, s, CaptureMode.THREAD_LOCAL);
            launches.forEach(l -> l.launch(s));
            slot.endCapture();
            x.asInts().copyFrom(hostX);
            slot.replay(s);
            int[] out = new int[n];
            y.asInts().copyTo(out);
            assertArrayEquals(cpuPipeline(hostX), out);
            slot.reset();
        } finally {
            graphs.close();
            kernels.forEach(Kernel::close);
            ctx.modules().unload("pipeline-u");
            s.close();
        }
    }
}
