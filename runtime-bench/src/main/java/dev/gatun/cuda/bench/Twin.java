package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The Java twin of {@code twins.c}: measures one {@link TwinRow} on Gatun exactly as the C twin
 * measures it with plain driver calls, one process per run, and prints one line:
 *
 * <pre>TWIN gatun ROW N TOTAL_NS BYTES</pre>
 *
 * <p>after an unreported run of the same row and a line that says whether the timed loop was
 * C2's code by then ({@link CompileWatch}; {@code COMPILED gatun ROW yes|no DETAIL}). A row that
 * needs a library this machine lacks ({@link TwinRow#needsBlas()}: cuBLAS) prints instead
 *
 * <pre>SKIP gatun ROW REASON</pre>
 *
 * <p>and the process exits 0: the table reports the row not run, the other rows still run.
 *
 * <p>The method (issue 11): a warm-up of N/2 operations and a stream sync, then N timed
 * operations and one final stream sync; TOTAL_NS is that wall time, so the value of the run is
 * TOTAL_NS / N. Host-issue rows ({@link TwinRow#batched()}) instead time batches of
 * {@link TwinRow#BATCH} operations without any sync inside the timing, the stream drained before
 * each batch outside it; TOTAL_NS is then the sum of the batches' times. BYTES is what the
 * measuring thread allocated on the Java heap during the timed part (C prints {@code -}).
 *
 * <p>The warm-up calls the timing loop in chunks of {@value #WARM_CHUNK} operations, so that the
 * JIT has compiled the loop itself, and not only the operation, before the timed pass: one long
 * loop would run its first tens of thousands of iterations in the interpreter, a cost the C
 * twin does not have.
 *
 * <pre>
 * java -cp gatun.jar dev.gatun.cuda.bench.Twin ROW N twins.ptx   one measurement
 * java -cp gatun.jar dev.gatun.cuda.bench.Twin --bare ROW N twins.ptx
 *                                                                 the same of the row's bare FFM twin
 *                                                                 ({@link BareTwin}), tagged bare
 * java -cp gatun.jar dev.gatun.cuda.bench.Twin --list            the rows: "ROW N c bare" ("-": no C
 *                                                                 twin, no bare twin)
 * java -cp gatun.jar dev.gatun.cuda.bench.Twin --ptx twins.cu twins.ptx 9.0
 *                                                                 PTX by NVRTC, where there is no nvcc
 * </pre>
 */
public final class Twin {

    static final int WARM_CHUNK = 10;

    /** How a line of a twin that did not run its row begins ({@link #skip}). */
    static final String SKIP = "SKIP ";

    private static final int EXIT_USAGE = 2;

    /** One run: total timed wall time and the bytes the measuring thread allocated meanwhile. */
    record Measurement(long totalNanos, long allocatedBytes) {
        String line(TwinRow row, int n) {
            return "TWIN gatun " + row.id() + " " + n + " " + totalNanos + " " + allocatedBytes;
        }
    }

    private Twin() {
    }

    public static void main(String[] args) throws IOException {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
        if (args.length == 1 && args[0].equals("--list")) {
            for (TwinRow row : TwinRow.values()) {
                out.println(row.id() + " " + row.n() + " " + (row.hasC() ? "c" : "-") + " "
                        + (BareTwin.covers(row) ? "bare" : "-"));
            }
            return 0;
        }
        if (args.length == 4 && args[0].equals("--bare")) {
            return bare(TwinRow.byId(args[1]), Integer.parseInt(args[2]), Path.of(args[3]), out);
        }
        if (args.length == 4 && args[0].equals("--ptx")) {
            writePtx(Path.of(args[1]), Path.of(args[2]), args[3]);
            return 0;
        }
        if (args.length != 3 || args[0].startsWith("-")) {
            err.println("usage: Twin ROW N PTX_FILE | Twin --bare ROW N PTX_FILE | Twin --list | Twin --ptx SOURCE.cu OUT.ptx "
                    + "MAJOR.MINOR");
            return EXIT_USAGE;
        }
        TwinRow row = TwinRow.byId(args[0]);
        int n = Integer.parseInt(args[1]);
        ModuleImage kernels = ModuleImage.fromFile(Path.of(args[2]));
        return warmedRun("gatun", row, CompileWatch.Method.of(Twin.class, "loop"),
                () -> line(row, n, Cuda.system(), kernels, TwinRow.TRANSFER_BYTES), out);
    }

    /**
     * The row's bare FFM twin alone in this process ({@code compare}'s {@code BARE=1} with one
     * process per twin, as the independent program of issue 36 ran it): its lines are tagged
     * {@code bare}; a row without a bare twin prints a {@code SKIP bare} line.
     */
    static int bare(TwinRow row, int n, Path ptx, PrintStream out) throws IOException {
        if (!BareTwin.covers(row)) {
            out.println(skip("bare", row, "no bare FFM twin for this row"));
            return 0;
        }
        SameProcess.Job job = new SameProcess.Job(row, n);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocateFrom(Files.readString(ptx)); // twins.c's PTX, for the same set-up
            return warmedRun("bare", row, BareTwin.loopOf(row), () -> SameProcess.runBare(job, text), out);
        }
    }

    /**
     * As SameProcess does: an unreported run first, then the reported one only once the timed
     * loop is C2's code (or the {@code COMPILED impl ROW no} line says it was not). A first run
     * that is a {@code SKIP} line is printed alone.
     */
    private static int warmedRun(String impl, TwinRow row, CompileWatch.Method loop, Supplier<String> run,
            PrintStream out) {
        try (CompileWatch compiles = new CompileWatch()) {
            String first = run.get();
            if (first.startsWith(SKIP)) {
                out.println(first);
                return 0;
            }
            CompileWatch.Verdict v = compiles.check(loop);
            for (int extra = 0; extra < SameProcess.EXTRA_WARM_UPS && !v.compiled(); extra++) {
                run.get();
                v = compiles.check(loop);
            }
            out.println("COMPILED " + impl + " " + row.id() + " " + (v.compiled() ? "yes" : "no") + " " + v.detail());
        }
        out.println(run.get());
        return 0;
    }

    /**
     * The line of one run: {@code TWIN gatun ...} ({@link #measure}), or {@code SKIP gatun ROW
     * REASON} when the row needs a library that cannot be loaded here (cuBLAS missing, or of
     * another major version). Any other failure propagates, a missing driver included.
     */
    static String line(TwinRow row, int n, Cuda cuda, ModuleImage kernels, long transferBytes) {
        try {
            return measure(row, n, cuda, kernels, transferBytes).line(row, n);
        } catch (TwinWorkload.LibraryMissing e) {
            return skip("gatun", row, e.getMessage());
        }
    }

    /** A {@code SKIP} line: {@code impl} did not run {@code row}, for {@code reason} (one line). */
    static String skip(String impl, TwinRow row, String reason) {
        return SKIP + impl + " " + row.id() + " " + reason.strip().replaceAll("\\s+", " ");
    }

    /**
     * Measures {@code n} operations of {@code row} on device 0 of {@code cuda}, in a context
     * opened with the row's options and closed afterwards.
     *
     * @throws IllegalArgumentException when n is not positive, or for a batched row not a multiple of the batch
     */
    static Measurement measure(TwinRow row, int n, Cuda cuda, ModuleImage kernels, long transferBytes) {
        if (n <= 0 || (row.batched() && n % TwinRow.BATCH != 0)) {
            throw new IllegalArgumentException("N is " + n + "; give a positive number"
                    + (row.batched() ? ", a multiple of " + TwinRow.BATCH + " for " + row.id() : ""));
        }
        try (CudaContext context = cuda.device(0).context(row.contextOptions());
                TwinWorkload workload = TwinWorkload.open(row, context, kernels, transferBytes, operations(row, n))) {
            Measurement m = row.batched() ? timeBatches(workload, n) : time(workload, n);
            workload.verify(n);
            return m;
        }
    }

    /** Every operation a run of {@code n} makes, warm-up included, as {@link #time} and {@link #timeBatches} loop. */
    static int operations(TwinRow row, int n) {
        int warmUp = row.batched() ? n / 2 / TwinRow.BATCH * TwinRow.BATCH : n / 2;
        return Math.addExact(warmUp, n);
    }

    private static Measurement time(TwinWorkload w, int n) {
        for (int i = 0; i < n; i += WARM_CHUNK) {
            loop(w, i, Math.min(i + WARM_CHUNK, n / 2));
        }
        w.stream().synchronize();
        com.sun.management.ThreadMXBean threads = threads();
        long bytes = threads.getCurrentThreadAllocatedBytes();
        long start = System.nanoTime();
        loop(w, 0, n);
        w.stream().synchronize();
        long total = System.nanoTime() - start;
        return new Measurement(total, threads.getCurrentThreadAllocatedBytes() - bytes);
    }

    private static Measurement timeBatches(TwinWorkload w, int n) {
        int batch = TwinRow.BATCH;
        for (int i = 0; i + batch <= n / 2; i += batch) {
            w.stream().synchronize();
            loop(w, i, i + batch);
        }
        com.sun.management.ThreadMXBean threads = threads();
        long bytes = threads.getCurrentThreadAllocatedBytes();
        long total = 0;
        for (int i = 0; i < n; i += batch) {
            w.stream().synchronize(); // outside the timing: the batch starts on an idle queue
            long start = System.nanoTime();
            loop(w, i, i + batch);
            total += System.nanoTime() - start;
        }
        w.stream().synchronize();
        return new Measurement(total, threads.getCurrentThreadAllocatedBytes() - bytes);
    }

    /** The timing loop, shared by warm-up and measurement so that both run the same compiled code. */
    private static void loop(TwinWorkload w, int from, int to) {
        for (int i = from; i < to; i++) {
            w.run(i);
        }
    }

    private static com.sun.management.ThreadMXBean threads() {
        return (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    }

    /** Compiles the twins' CUDA source to PTX with NVRTC, for a host without nvcc. */
    private static void writePtx(Path source, Path ptx, String computeCapability) throws IOException {
        String[] parts = computeCapability.strip().split("\\.");
        if (parts.length != 2) {
            throw new IllegalArgumentException("compute capability '" + computeCapability + "'; give MAJOR.MINOR, e.g. 9.0");
        }
        CompileTarget target = CompileTarget.ptx(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]));
        byte[] image = NvrtcLibrary.system().compiler().compile(Files.readString(source),
                CompileOptions.builder(target).programName(source.getFileName().toString()).build()).image();
        Files.write(ptx, image);
    }
}
