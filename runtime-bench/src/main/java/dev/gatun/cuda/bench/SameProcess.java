package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.ModuleImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Both twins of some rows in one process: the C twin from {@code libtwins.so} (twins.c built as
 * a shared library, entry {@code gatun_twin_run}), Gatun's twin ({@link Twin#measure}) and,
 * optionally, the twin of a baseline jar (an earlier Gatun, in its own class loader), one after
 * the other for each row, in an order that rotates from row to row. It prints the lines that
 * {@code compare} collects from separate processes:
 *
 * <pre>
 *     TWIN c|gatun|baseline|bare ROW N TOTAL_NS BYTES|-
 *     FAIL c ROW ROUND STATUS          (the C twin's check failed, or a bad row or N)
 *     SKIP c|gatun|baseline|bare ROW REASON (that twin cannot run the row here: cuBLAS missing, or a
 *                                       baseline jar older than the row; printed once, from the
 *                                       row's first run, after which the row runs without it)
 *     COMPILED gatun|baseline|bare ROW yes|no DETAIL
 *                                       (whether that Java twin's timed loop was C2's code before
 *                                       the row's first reported run; {@link CompileWatch})
 * </pre>
 *
 * <p>Why: on the H200's machines the time of a sub-microsecond driver call depends on the
 * process. The C twin's stream-ordered allocate + free runs at about 0.7 µs in some processes
 * and about 1.1 µs in others, on any CPU it is pinned to, so ratios of runs in separate
 * processes spread from 0.6 to 2 and medians of five pairs move by 30% between runs. In one
 * process both twins meet the same driver state, and their ratio measures what differs: the
 * binding. Usage:
 *
 * <pre>
 *     SameProcess LIBTWINS PTX_FILE ROUND [--baseline JAR] [--slices K] [--bare true] ROW[:N] ...
 * </pre>
 *
 * ROUND numbers the FAIL lines and picks where the rotation starts; N defaults to the row's.
 *
 * <p>With {@code --slices K}, each row of N at least {@value #SLICED_FROM} runs as K slices of N/K operations per twin instead of one
 * run of N, each slice a sub-round (a {@code ROUND} line of its own, numbered ROUND × 100 + the
 * slice's index) with its own rotation of the twins' order, after one slice of each twin that is
 * not reported. Why: within one process the time of the stream-ordered allocate + free still
 * drifts from second to second (in one H200 run, the C twin ran 0.65 µs in one run and 1.16 µs
 * in the next, and Gatun's and the baseline's runs moved with it), so runs of a second each,
 * one after the other, often compare a fast phase with a slow one. Slices a tenth as long pair
 * up runs that are that much closer in time; the table's median is then over every slice's
 * ratio. A row of smaller N runs once per twin, after one unreported run of each as well.
 *
 * <p>Every row, sliced or not, is reported only after one unreported run of each twin and, while
 * a Java twin's timed loop is not yet C2's code ({@link CompileWatch}), up to
 * {@value #EXTRA_WARM_UPS} more: a loop still in the interpreter or in C1's profiling code
 * measures the JIT's warm-up, not the binding. The COMPILED lines say what the reported runs ran.
 *
 * <p>With {@code --bare true}, the rows that have a {@link BareTwin} (the same driver or library
 * calls as bare FFM downcalls) run it as a fourth twin, tagged {@code bare}; where a GEMM row's
 * libraries are missing, it prints {@code SKIP bare} and the row runs on without it.
 */
public final class SameProcess {

    private static final int EXIT_USAGE = 2;
    /** The system property that names twins.c's library in this process, for {@link BareDowncalls.ViaC}. */
    static final String LIBRARY_PROPERTY = "gatun.bench.twinsLibrary";
    /** The most slices of a row per round; a slice's sub-round is ROUND × this + its index. */
    static final int MAX_SLICES = 100;
    /**
     * The smallest N that is sliced: the sub-microsecond rows (N in the hundreds of thousands and
     * more) drift within a process; the rows of long operations (256 MiB copies, N of 100) do
     * not, and a slice of them would be a handful of operations.
     */
    static final int SLICED_FROM = 100_000;
    /** Unreported runs more, at most, while a Java twin's timed loop is not yet C2's code. */
    static final int EXTRA_WARM_UPS = 2;
    /** What {@code gatun_twin_run} returns for a row whose library (cuBLAS) twins.c could not load. */
    static final long C_SKIPPED = -3;
    /** Where the unreported warm-up runs' lines go. */
    private static final PrintStream DISCARD = new PrintStream(OutputStream.nullOutputStream());

    private SameProcess() {
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args, System.out, System.err));
    }

    /** One row to run, with its N. */
    record Job(TwinRow row, int n) {
        static Job parse(String spec) {
            int colon = spec.indexOf(':');
            TwinRow row = TwinRow.byId(colon < 0 ? spec : spec.substring(0, colon));
            if (!row.hasC()) {
                throw new IllegalArgumentException(row.id() + " has no C twin");
            }
            return new Job(row, colon < 0 ? row.n() : Integer.parseInt(spec.substring(colon + 1)));
        }
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        List<String> rest = new ArrayList<>(List.of(args));
        if (rest.size() < 4) {
            err.println("usage: SameProcess LIBTWINS PTX_FILE ROUND [--baseline JAR] [--slices K] [--bare true] ROW[:N] ...");
            return EXIT_USAGE;
        }
        Path library = Path.of(rest.remove(0));
        System.setProperty(LIBRARY_PROPERTY, library.toAbsolutePath().toString()); // for BareDowncalls.ViaC
        Path ptx = Path.of(rest.remove(0));
        int round = Integer.parseInt(rest.remove(0));
        Method baseline = null;
        int slices = 1;
        boolean bare = false;
        while (!rest.isEmpty() && rest.get(0).startsWith("--")) {
            String flag = rest.remove(0);
            if (rest.isEmpty()) {
                err.println("SameProcess: " + flag + " needs a value");
                return EXIT_USAGE;
            }
            switch (flag) {
                case "--baseline" -> baseline = baselineTwin(Path.of(rest.remove(0)));
                case "--slices" -> slices = Integer.parseInt(rest.remove(0));
                case "--bare" -> bare = Boolean.parseBoolean(rest.remove(0));
                default -> {
                    err.println("SameProcess: unknown flag " + flag);
                    return EXIT_USAGE;
                }
            }
        }
        if (slices < 1 || slices > MAX_SLICES) {
            err.println("SameProcess: --slices takes 1 to " + MAX_SLICES + ", not " + slices);
            return EXIT_USAGE;
        }
        List<Job> jobs = rest.stream().map(Job::parse).toList();
        ModuleImage kernels = ModuleImage.fromFile(ptx);
        Arena arena = Arena.ofConfined();
        // -Dgatun.bench.compileWatch=false: no Flight Recorder recording in this process (the
        // COMPILED lines then say "unchecked"), to measure what the recording itself costs the
        // Java twins; -Dgatun.bench.twins=c,bare: only those twins (the others left out).
        boolean watch = Boolean.parseBoolean(System.getProperty("gatun.bench.compileWatch", "true"));
        List<String> only = List.of(System.getProperty("gatun.bench.twins", "c,gatun,baseline,bare").split(","));
        try (arena; CompileWatch compiles = watch ? new CompileWatch() : null) {
            Twins twins = new Twins(cTwin(library, arena), arena, arena.allocateFrom(Files.readString(ptx)), kernels,
                    baseline, ptx);
            List<String> plain = new ArrayList<>(baseline == null ? List.of("c", "gatun") : List.of("c", "gatun", "baseline"));
            plain.retainAll(only);
            List<String> withBare = new ArrayList<>(plain);
            if (only.contains("bare")) {
                withBare.add("bare");
            }
            for (int j = 0; j < jobs.size(); j++) {
                Job job = jobs.get(j);
                List<String> impls = bare && BareTwin.covers(job.row()) ? withBare : plain;
                boolean sliced = slices > 1 && job.n() >= SLICED_FROM;
                Job run = sliced ? new Job(job.row(), Math.max(1, job.n() / slices)) : job;
                // One run of each twin first that is not reported: every twin's path compiled
                // and its first use loaded (a kilobyte or two per operation at N 100), the
                // driver's pool grown. Then each Java twin's timed loop must be C2's code, or
                // the run measures the JIT's warm-up: up to two more unreported runs while one
                // is not, and a COMPILED line per twin says what the reported runs ran.
                List<String> skipped = twins.runEach(impls, round + j, run, round, DISCARD);
                if (!skipped.isEmpty()) {
                    // A twin that cannot run the row here (its library missing) is left out of
                    // it, said once; without C, or without two twins to compare, nothing is.
                    skipped.forEach(out::println);
                    impls = impls.stream().filter(i -> skipped.stream().noneMatch(l -> l.startsWith(Twin.SKIP + i + " ")))
                            .toList();
                    if (!impls.contains("c") || impls.size() < 2) {
                        continue;
                    }
                }
                for (int extra = 0; extra < EXTRA_WARM_UPS && !twins.compiled(compiles, impls, job.row(), null); extra++) {
                    twins.runEach(impls, round + j, run, round, DISCARD);
                }
                twins.compiled(compiles, impls, job.row(), out);
                if (!sliced) {
                    twins.runEach(impls, round + j, run, round, out);
                    continue;
                }
                for (int k = 0; k < slices; k++) {
                    int subRound = round * MAX_SLICES + k; // each slice a sub-round of its own
                    out.println("ROUND " + subRound);
                    twins.runEach(impls, round + j + k, run, subRound, out);
                }
            }
        }
        return 0;
    }

    /** What the twins of one process run with: the C library's entry, the PTX, the baseline (or null). */
    private record Twins(MethodHandle c, Arena arena, MemorySegment ptxText, ModuleImage kernels, Method baseline,
            Path ptx) {

        /**
         * Whether every Java twin among {@code impls} has its timed loop as live C2 code; with
         * {@code out}, prints one line per twin: {@code COMPILED impl row yes|no detail}.
         */
        boolean compiled(CompileWatch compiles, List<String> impls, TwinRow row, PrintStream out) {
            boolean all = true;
            for (String impl : impls) {
                CompileWatch.Method loop = switch (impl) {
                    case "c" -> null;
                    case "gatun" -> CompileWatch.Method.of(Twin.class, "loop");
                    case "bare" -> BareTwin.loopOf(row);
                    default -> CompileWatch.Method.of(baseline.getDeclaringClass(), "loop");
                };
                if (loop == null) {
                    continue;
                }
                CompileWatch.Verdict v = compiles == null ? new CompileWatch.Verdict(true, "unchecked (no recording)")
                        : compiles.check(loop);
                all &= v.compiled();
                if (out != null) {
                    out.println("COMPILED " + impl + " " + row.id() + " " + (v.compiled() ? "yes" : "no") + " " + v.detail());
                }
            }
            return all;
        }

        /**
         * One run of each twin of {@code job}, in the order that {@code rotation} picks; their
         * lines go to {@code out}, except SKIP lines, which are returned.
         */
        List<String> runEach(List<String> impls, int rotation, Job job, int round, PrintStream out) {
            List<String> skipped = new ArrayList<>();
            for (int k = 0; k < impls.size(); k++) {
                String impl = impls.get((rotation + k) % impls.size());
                String line = switch (impl) {
                    case "c" -> runC(c, arena, ptxText, job, round);
                    case "gatun" -> Twin.line(job.row(), job.n(), Cuda.system(), kernels, TwinRow.TRANSFER_BYTES);
                    case "bare" -> runBare(job, ptxText);
                    default -> runBaseline(baseline, job, ptx);
                };
                if (line.startsWith(Twin.SKIP)) {
                    skipped.add(line);
                } else {
                    out.println(line);
                    out.flush();
                }
            }
            return skipped;
        }
    }

    /**
     * The bare twin's line: {@code TWIN bare ...}, or, as for a C twin that could not load cuBLAS,
     * {@code SKIP bare ROW REASON} when a GEMM row's libraries cannot be opened here.
     */
    static String runBare(Job job, MemorySegment ptx) {
        try {
            return "TWIN bare " + job.row().id() + " " + job.n() + " " + BareTwin.measure(job.row(), job.n(), ptx) + " -";
        } catch (TwinWorkload.LibraryMissing e) {
            return Twin.skip("bare", job.row(), e.getMessage());
        } catch (Throwable t) {
            throw new IllegalStateException("the bare twin of " + job.row().id() + " failed", t);
        }
    }

    private static MethodHandle cTwin(Path library, Arena arena) {
        SymbolLookup twins = SymbolLookup.libraryLookup(library, arena);
        // Safety: gatun_twin_run(const char *id, long n, const char *ptx) returns long long; it
        // reads both strings (NUL-terminated, in the arena, alive for the call) and keeps neither.
        return Linker.nativeLinker().downcallHandle(twins.findOrThrow("gatun_twin_run"),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.ADDRESS));
    }

    private static String runC(MethodHandle c, Arena arena, MemorySegment ptxText, Job job, int round) {
        long total;
        try {
            total = (long) c.invokeExact(arena.allocateFrom(job.row().id()), (long) job.n(), ptxText);
        } catch (Throwable t) {
            throw new IllegalStateException("gatun_twin_run failed", t);
        }
        if (total == C_SKIPPED) {
            return Twin.skip("c", job.row(), "cuBLAS missing: twins.c could not load it, or was built without its headers "
                    + "(the reason is on stderr, in compare's twins.log)");
        }
        return total >= 0 ? "TWIN c " + job.row().id() + " " + job.n() + " " + total + " -"
                : "FAIL c " + job.row().id() + " " + round + " " + total;
    }

    /**
     * The baseline jar's {@code Twin.run(String[], PrintStream, PrintStream)}, in a class loader
     * of its own over the platform loader, so that its Gatun (classes, settings, loader of
     * libcuda) is wholly its own; both Gatuns use the device's one primary context.
     */
    private static Method baselineTwin(Path jar) throws IOException, ReflectiveOperationException {
        URLClassLoader loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader());
        Method run = loader.loadClass(Twin.class.getName())
                .getDeclaredMethod("run", String[].class, PrintStream.class, PrintStream.class);
        run.setAccessible(true); // package-private in both jars; the baseline's Twin is this class's twin
        return run;
    }

    private static String runBaseline(Method run, Job job, Path ptx) {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        ByteArrayOutputStream error = new ByteArrayOutputStream();
        try (PrintStream o = new PrintStream(line, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(error, true, StandardCharsets.UTF_8)) {
            Object status = run.invoke(null, new String[] {job.row().id(), Integer.toString(job.n()), ptx.toString()}, o, e);
            if (!Integer.valueOf(0).equals(status)) {
                throw new IllegalStateException("the baseline twin of " + job.row().id() + " exited with " + status + ": "
                        + error.toString(StandardCharsets.UTF_8));
            }
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof IllegalArgumentException unknown && unknown.getMessage() != null
                    && unknown.getMessage().startsWith("no benchmark row")) {
                return Twin.skip("baseline", job.row(), "the baseline jar has no row " + job.row().id());
            }
            throw new IllegalStateException("the baseline twin of " + job.row().id() + " failed", e);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("the baseline twin of " + job.row().id() + " failed", e);
        }
        String skipped = line.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith(Twin.SKIP + "gatun "))
                .findFirst().orElse(null);
        if (skipped != null) {
            return skipped.replaceFirst("^SKIP gatun ", "SKIP baseline ");
        }
        // Only its TWIN line, retagged (the baseline's twin calls itself gatun). A baseline recent
        // enough to check its own loop prints a COMPILED line too, from a watch that began with
        // that run and so never saw the loop's compilation: this process's watch (compiled())
        // answers for the baseline's loop instead.
        return line.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith("TWIN gatun ")).findFirst()
                .map(l -> l.replaceFirst("^TWIN gatun ", "TWIN baseline "))
                .orElseThrow(() -> new IllegalStateException("the baseline twin of " + job.row().id() + " printed no TWIN line: "
                        + line.toString(StandardCharsets.UTF_8)));
    }
}
