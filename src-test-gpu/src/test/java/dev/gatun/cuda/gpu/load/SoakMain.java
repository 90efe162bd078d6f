package dev.gatun.cuda.gpu.load;

import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The soak command (the bundle's {@code ./soak}): at least 1,000,000 allocate/close cycles over
 * mixed sizes and kinds and 1,000,000 kernel launches with argument updates, repeated until the
 * run has lasted long enough, while device memory, pinned owners, JVM heap after GC, native
 * memory (NMT) and the thread count are sampled. After warm-up every series must be flat: its
 * least-squares slope within the bound stated in src-test-gpu/README.md.
 *
 * <p>It lives in the GPU suite's test sources so that it ships in the bundle's test jar and runs
 * with the bundle's JDK, next to the stress test and the helpers both share.
 *
 * <p>Writes soak.csv and soak.svg into the output folder. Exit status: 0 when every series is
 * flat and every launch's result matched the CPU, 1 otherwise, 2 for a bad command line, 3
 * without a usable GPU. Needs {@code -XX:NativeMemoryTracking=summary} for the native series.
 */
public final class SoakMain {

    private static final double MIB = 1024.0 * 1024.0;
    private static final int ELEMENTS = 4096;
    /** Launches between two checks of the output against the CPU. */
    private static final int CHECK_EVERY = 10_000;
    /** Above the pool's largest class (1 GiB): a plain cuMemAlloc and cuMemFree each time. */
    private static final long PLAIN_BYTES = (1L << 30) + (1L << 20);
    private static final int PLAIN_EVERY = 4096;

    private static final String SOURCE = """
            extern "C" __global__ void store(unsigned int* y, unsigned int v, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = v * (unsigned int) (i + 1);
            }
            """;

    private final CudaContext ctx;
    private final SoakOptions options;
    private final Series deviceUsed = new Series("device memory used", "MiB", 8);
    private final Series gatunBytesLive = new Series("Gatun device bytes live", "MiB", 8);
    private final Series pinnedOwners = new Series("pinned owners", "owners", 1);
    private final Series heapAfterGc = new Series("JVM heap after GC", "MiB", 4);
    private final Series nativeCommitted = new Series("native committed (NMT)", "MiB", 8);
    private final Series threads = new Series("threads", "threads", 0.5);
    private final List<Series> series = List.of(deviceUsed, gatunBytesLive, pinnedOwners, heapAfterGc, nativeCommitted, threads);
    private long startNanos;
    private long mismatches;

    private SoakMain(CudaContext ctx, SoakOptions options) {
        this.ctx = ctx;
        this.options = options;
    }

    public static void main(String[] args) {
        String env = System.getenv("OUT");
        SoakOptions options;
        try {
            options = SoakOptions.parse(args, Path.of(env == null || env.isEmpty() ? "." : env));
        } catch (IllegalArgumentException e) {
            System.err.println("soak: " + e.getMessage());
            System.exit(2);
            return;
        }
        int status;
        try {
            Cuda cuda = Cuda.system();
            if (cuda.deviceCount() == 0) {
                System.err.println("soak: the CUDA driver reports no device; run it on a machine with an NVIDIA GPU");
                status = 3;
            } else {
                status = new SoakMain(cuda.device(0).context(), options).run();
            }
        } catch (CudaUnavailableException e) {
            System.err.println("soak: needs an NVIDIA GPU with its driver and NVRTC: " + e.getMessage());
            status = 3;
        } catch (IOException e) {
            System.err.println("soak: could not write the results: " + e);
            status = 1;
        }
        System.exit(status);
    }

    private int run() throws IOException {
        if (NativeMemory.committedBytes(NativeMemory.summary()).isEmpty()) {
            System.err.println("soak: native memory tracking is off; start the JVM with -XX:NativeMemoryTracking=summary "
                    + "(./soak does)");
            return 2;
        }
        System.out.printf(Locale.ROOT, "soak: %s; at least %,d allocate/close cycles and %,d launches, at least %.0f s, "
                + "sampled every %.0f s, warm-up %.0f s%n", ctx.device().name(), options.cycles(), options.launches(),
                options.seconds(), options.sampleSeconds(), options.warmupSeconds());
        NvrtcLibrary.system().compiler().load(ctx.modules(), "soak", SOURCE,
                CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), "store");
        ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "soak-sampler");
            t.setDaemon(true);
            return t;
        });
        long cycles = 0;
        long launches = 0;
        try (Kernel store = ctx.modules().kernel("soak", "store"); Stream stream = ctx.createStream();
                DeviceBuffer a = ctx.allocate(4L * ELEMENTS); DeviceBuffer b = ctx.allocate(4L * ELEMENTS)) {
            ctx.modules().unload("soak");
            KernelLaunch launch = store.prepare(LaunchConfig.covering(ELEMENTS, 256), KernelArg.pointer(a),
                    KernelArg.i32(0), KernelArg.i32(ELEMENTS));
            Random random = new Random(42);
            startNanos = System.nanoTime();
            sample();
            long period = (long) (options.sampleSeconds() * 1e9);
            sampler.scheduleAtFixedRate(this::sampleLogged, period, period, TimeUnit.NANOSECONDS);
            int[] got = new int[ELEMENTS];
            while (cycles < options.cycles() || launches < options.launches() || elapsedSeconds() < options.seconds()) {
                cycle(cycles++, random, stream);
                // The argument updates: a new value every launch, the other buffer every CHECK_EVERY launches.
                DeviceBuffer target = (launches / CHECK_EVERY) % 2 == 0 ? a : b;
                int value = random.nextInt();
                boolean check = (launches + 1) % CHECK_EVERY == 0;
                if (check) {
                    stream.fill(target.asInts(), 0xDEADBEEF); // poisoned, so a launch that did not run shows
                }
                launch.setPointer(0, target.asInts()).setInt(1, value).launch(stream);
                launches++;
                if (check) {
                    // The copy below waits for this stream's launches in any case (SyncOrdering); the soak
                    // drains the stream itself so that every check starts from an idle stream.
                    stream.synchronize();
                    Arrays.fill(got, 0x5A5A5A5A);
                    target.asInts().copyTo(got);
                    for (int i = 0; i < ELEMENTS; i++) {
                        if (got[i] != value * (i + 1)) {
                            mismatches++;
                            System.out.printf(Locale.ROOT, "soak: MISMATCH after launch %d at element %d: %d, expected %d%n",
                                    launches, i, got[i], value * (i + 1));
                            break;
                        }
                    }
                }
            }
            stream.synchronize();
        } finally {
            sampler.shutdownNow();
        }
        ctx.synchronize();
        sample();
        return report(cycles, launches);
    }

    /** One allocate/close cycle; the kind and size vary with the cycle number and the random source. */
    private void cycle(long n, Random random, Stream stream) {
        if (n % PLAIN_EVERY == PLAIN_EVERY - 1) {
            ctx.allocate(PLAIN_BYTES).close();
            return;
        }
        long bytes = 512L << random.nextInt(14); // 512 B .. 4 MiB
        switch ((int) (n % 8)) {
            case 0, 1, 2 -> ctx.allocate(bytes - random.nextInt(512)).close();
            case 3 -> {
                // Closed while its fill is still queued: freed by retirement once the fill completes.
                DeviceBuffer d = ctx.allocate(bytes);
                stream.fill(d.asInts(), (int) n);
                d.close();
            }
            case 4, 5 -> {
                DeviceBuffer d = stream.allocate(bytes);
                stream.fill(d.asInts(), (int) n);
                d.close();
            }
            default -> {
                try (PinnedBuffer p = ctx.allocatePinned(Math.min(bytes, 1 << 20))) {
                    p.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) n);
                }
            }
        }
    }

    private double elapsedSeconds() {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    private void sampleLogged() {
        try {
            sample();
        } catch (RuntimeException e) {
            // A failed sample leaves a gap; the run goes on, and the gap shows in the log.
            System.out.println("soak: sample failed: " + e);
        }
    }

    private synchronized void sample() {
        double t = elapsedSeconds();
        var memory = ctx.diagnostics().memoryInfo();
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        long nativeBytes = NativeMemory.committedBytes(NativeMemory.summary()).orElse(0);
        deviceUsed.add(t, (memory.totalBytes() - memory.freeBytes()) / MIB);
        ContextCounters counters = ctx.diagnostics().counters();
        // The owners' bytes and the pool's retained blocks: all the device memory Gatun's allocations hold.
        gatunBytesLive.add(t, (counters.liveBytes() + counters.devicePoolRetainedBytes()) / MIB);
        pinnedOwners.add(t, ctx.diagnostics().liveOwners(OwnerKind.PINNED_BUFFER) + ctx.diagnostics().liveOwners(OwnerKind.STAGING));
        heapAfterGc.add(t, heap / MIB);
        nativeCommitted.add(t, nativeBytes / MIB);
        threads.add(t, ManagementFactory.getThreadMXBean().getThreadCount());
        System.out.printf(Locale.ROOT, "soak: t=%6.0f s device used %.1f MiB, Gatun live %.1f MiB, pinned owners %.0f, "
                + "heap %.1f MiB, native %.1f MiB, threads %.0f%n", t, last(deviceUsed), last(gatunBytesLive),
                last(pinnedOwners), last(heapAfterGc), last(nativeCommitted), last(threads));
    }

    private static double last(Series s) {
        double[] v = s.values();
        return v[v.length - 1];
    }

    private int report(long cycles, long launches) throws IOException {
        Files.createDirectories(options.out());
        Path csv = options.out().resolve("soak.csv");
        Path svg = options.out().resolve("soak.svg");
        Files.writeString(csv, SeriesCsv.render(series));
        String title = String.format(Locale.ROOT, "Gatun soak on %s: %,d cycles, %,d launches, %.0f s", ctx.device().name(),
                cycles, launches, elapsedSeconds());
        Files.writeString(svg, SvgPlot.render(title, series, options.warmupSeconds()));
        System.out.printf(Locale.ROOT, "soak: %,d allocate/close cycles, %,d launches in %.0f s; %d mismatches; "
                + "wrote %s and %s%n", cycles, launches, elapsedSeconds(), mismatches, csv, svg);
        boolean flat = true;
        for (Series s : series) {
            Flatness.Verdict v = Flatness.judge(s, options.warmupSeconds());
            System.out.println("soak: " + v.describe());
            flat &= v.flat();
        }
        boolean pass = flat && mismatches == 0;
        System.out.println("soak: " + (pass ? "PASS" : "FAIL") + " (every series flat after warm-up: " + flat
                + ", mismatches: " + mismatches + ")");
        return pass ? 0 : 1;
    }
}
