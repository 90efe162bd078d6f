package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceAttribute;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.profiling.CuptiActivity;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.io.TempDir;

/**
 * gatun-profiling on a real GPU (issue 39 §2): with CUPTI activity started and a JFR recording
 * on, kernels of known length (each spins for a number of GPU clock cycles, between two timing
 * events on its stream) become {@code dev.gatun.GpuKernel} events whose GPU durations agree with
 * the event-timed ones; a graph replay's kernel names its graph and node; a copy's event its
 * bytes and direction. Tagged timing: it compares durations, and compute-sanitizer holds CUPTI
 * itself (so the sanitizer runs leave it out).
 */
@RequiresGpu
@Tag(GpuTags.TIMING)
class CuptiActivityGpuTest {

    /** Spins for {@code cycles} clock cycles, then writes each thread's input plus the cycle count (checked on the CPU). */
    private static final String SPIN = """
            extern "C" __global__ void cupti_spin(int* out, const int* in, long long cycles, int n) {
                long long start = clock64();
                while (clock64() - start < cycles) { }
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = in[i] + (int) (cycles & 0xFFFF);
            }
            """;
    private static final int N = 256;
    /** Agreement asked of a kernel's CUPTI duration and its event-timed one: 10% or 50 µs, whichever is more. */
    private static final double RELATIVE = 0.10;
    private static final double ABSOLUTE_MICROS = 50;
    /** The untimed launch before the timed ones. */
    private static final int WARM_UP = 1;

    @Test
    void kernelCopyAndGraphActivityBecomeJfrEventsWithTheGpuDurationsEventsMeasure(@TempDir Path dir,
            TestReporter reporter) throws Exception {
        CudaContext ctx = Gpu.context();
        int clockKhz = ctx.device().attribute(DeviceAttribute.CLOCK_RATE); // kHz: cycles per ms
        long[] cycles = {clockKhz / 4L, clockKhz / 2L, clockKhz, 2L * clockKhz, 4L * clockKhz}; // ~0.25 to ~4 ms
        Random random = new Random(39);
        int[] input = random.ints(N).toArray();
        List<Double> eventMillis = new ArrayList<>();
        Path file = dir.resolve("cupti.jfr");
        long graphKernels;
        try (Kernel spin = Gpu.kernel(SPIN, "cupti_spin"); Stream s = ctx.createStream();
                DeviceBuffer in = ctx.allocate(4L * N); DeviceBuffer out = ctx.allocate(4L * N);
                Event before = ctx.createTimingEvent(); Event after = ctx.createTimingEvent();
                Recording recording = new Recording()) {
            recording.enable("dev.gatun.GpuKernel");
            recording.enable("dev.gatun.GpuMemcpy");
            recording.start();
            try (CuptiActivity gpu = CuptiActivity.start()) {
                in.asInts().copyFrom(input); // a host-to-device copy of 4N bytes
                // One launch first, untimed: on the H100 the first launch's event-timed span was
                // 0.96 ms where CUPTI's kernel took 0.25 ms (the module's lazy loading and CUPTI's
                // first-launch work fall between its events, not in the kernel).
                spin.launch(s, LaunchConfig.of(N / 64, 64), KernelArg.pointer(out), KernelArg.pointer(in),
                        KernelArg.i64(cycles[0]), KernelArg.i32(N));
                s.synchronize();
                for (long c : cycles) {
                    // A one-block spin of ~2 ms first keeps the GPU busy while the host queues the
                    // fill, the events and the timed kernel: with the GPU idle, the host's work for
                    // the launch fell between the events (on the H100, after the warm-up, the first
                    // timed kernel's events spanned 0.53 ms around CUPTI's 0.25 ms kernel).
                    spin.launch(s, LaunchConfig.of(1, 64), KernelArg.pointer(out), KernelArg.pointer(in),
                            KernelArg.i64(2L * clockKhz), KernelArg.i32(64));
                    s.fill(out.asInts(), 0x7FC0DEAD); // poisoned: an unwritten element shows
                    before.record(s);
                    spin.launch(s, LaunchConfig.of(N / 64, 64), KernelArg.pointer(out), KernelArg.pointer(in),
                            KernelArg.i64(c), KernelArg.i32(N));
                    after.record(s);
                    after.synchronize();
                    eventMillis.add((double) after.elapsedMillis(before));
                    int[] got = new int[N];
                    out.asInts().copyTo(got);
                    int[] expected = new int[N];
                    for (int i = 0; i < N; i++) {
                        expected[i] = input[i] + (int) (c & 0xFFFF);
                    }
                    assertArrayEquals(expected, got, "cycles " + c);
                }
                Graph graph;
                try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                    spin.launch(s, LaunchConfig.of(N / 64, 64), KernelArg.pointer(out), KernelArg.pointer(in),
                            KernelArg.i64(1000), KernelArg.i32(N));
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    exec.launch(s);
                    exec.launch(s);
                    s.synchronize();
                }
                gpu.flush();
                graphKernels = 2;
                assertTrue(gpu.kernels() >= WARM_UP + 2L * cycles.length + graphKernels, "kernels seen: " + gpu.kernels());
            }
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        List<RecordedEvent> spins = events.stream().filter(e -> e.getEventType().getName().equals("dev.gatun.GpuKernel"))
                .filter(e -> e.getString("name").equals("cupti_spin"))
                .sorted((a, b) -> Long.compare(a.getLong("gpuStart"), b.getLong("gpuStart"))).toList();
        List<RecordedEvent> blockers = spins.stream().filter(e -> e.getString("grid").equals("1x1x1")).toList();
        assertEquals(cycles.length, blockers.size(), "GpuKernel events of the one-block spins: " + blockers);
        List<RecordedEvent> kernels = spins.stream().filter(e -> !e.getString("grid").equals("1x1x1")).toList();
        assertEquals(WARM_UP + cycles.length + graphKernels, kernels.size(), "GpuKernel events of cupti_spin: " + kernels);
        kernels = kernels.subList(WARM_UP, kernels.size());
        StringBuilder summary = new StringBuilder("CUPTI kernel durations vs timing events (ms):");
        for (int i = 0; i < cycles.length; i++) {
            RecordedEvent k = kernels.get(i);
            double cuptiMillis = k.getLong("gpuDuration") / 1e6;
            double timed = eventMillis.get(i);
            double allowed = Math.max(RELATIVE * timed, ABSOLUTE_MICROS / 1000);
            summary.append(String.format(" %.3f/%.3f", cuptiMillis, timed));
            assertTrue(Math.abs(cuptiMillis - timed) <= allowed, String.format("kernel %d: CUPTI %.4f ms, events "
                    + "%.4f ms, allowed difference %.4f ms", i, cuptiMillis, timed, allowed));
            assertEquals(0, k.getLong("graphId"), "an eager launch runs in no graph");
            assertEquals((N / 64) + "x1x1", k.getString("grid"));
            assertEquals("64x1x1", k.getString("block"));
            assertTrue(k.getInt("correlationId") > 0);
        }
        for (RecordedEvent k : kernels.subList(cycles.length, kernels.size())) {
            assertTrue(k.getLong("graphId") != 0 && k.getLong("graphNodeId") != 0, "a replay's kernel names its "
                    + "graph and node: " + k);
        }
        List<RecordedEvent> uploads = events.stream().filter(e -> e.getEventType().getName().equals("dev.gatun.GpuMemcpy"))
                .filter(e -> e.getString("copyKind").equals("HtoD") && e.getLong("bytes") == 4L * N).toList();
        assertTrue(!uploads.isEmpty(), "the input's upload is a GpuMemcpy event");
        String line = summary + String.format("; graph %d node %d; %d events in all", kernels.getLast().getLong("graphId"),
                kernels.getLast().getLong("graphNodeId"), events.size());
        System.out.println(line);
        reporter.publishEntry("cupti", line);
        Files.deleteIfExists(file);
    }
}
