package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLibrary;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.SmPartition;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * 10,000 virtual threads at once on the primary context and on two green contexts of device 0:
 * each allocates (from its context, and in its own stream's order), uploads random words, launches
 * an add kernel, copies device to device, captures a second add (relaxed: a global or thread-local
 * capture cannot begin on a virtual thread), replays it, reads back into a poisoned array and
 * checks every word against the CPU. Virtual threads park on Gatun's locks and waits and resume
 * on whichever carrier is free, where another of the three contexts may be current: every call
 * that acts on the current context makes its own current there first. Afterwards every context's
 * live owners and counters are back to their baseline.
 *
 * <p>Prints {@code VIRTUAL-THREADS 10000 threads on 3 contexts: ... launches, ... copies, ...
 * allocations, ... captures, ... replays; 0 mismatches; live owners back to baseline}, with the
 * time and the carriers the threads ran on (1000 threads under {@code ./sanitize}: see THREADS).
 */
@RequiresGpu
@Tag(GpuTags.BREAKS_INITCHECK)
class VirtualThreadsGpuTest {

    private static final String SOURCE = """
            extern "C" __global__ void add(int* p, int n, int v) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) p[i] += v;
            }
            """;
    /**
     * 10,000; a tenth under a sanitizer, where 10,000 threads' 40,000 instrumented launches and
     * replays take longer than a test may (every path is still taken, by 1,000 threads at once).
     */
    private static final int THREADS = Gpu.sanitizer().isPresent() ? 1_000 : 10_000;
    private static final int WORDS = 256;
    private static final int REPLAYS = 3;
    /** What a read-back array holds before the copy: a word no check expects. */
    private static final int POISON = 0xDEAD_BEEF;
    /** The deadlock guard of the whole run, never a timing assertion (it should take seconds). */
    private static final Duration ALL_DONE = Duration.ofMinutes(3);

    /** What the threads did, summed; stream-ordered allocations per context, for its counters. */
    private static final class Tally {
        final LongAdder launches = new LongAdder();
        final LongAdder copies = new LongAdder();
        final LongAdder allocations = new LongAdder();
        final LongAdder captures = new LongAdder();
        final LongAdder replays = new LongAdder();
        final LongAdder mismatches = new LongAdder();
        final Queue<String> firstMismatches = new ConcurrentLinkedQueue<>();
        final Set<String> carriers = ConcurrentHashMap.newKeySet();
        final LongAdder movedThreads = new LongAdder();
    }

    /** One context, its add kernel, and how many stream-ordered allocations the run made in it. */
    private record Target(CudaContext context, Kernel add, LongAdder streamOrdered) {
    }

    /**
     * The carrier a virtual thread runs on now, as {@code VirtualThread.toString} names it after
     * its '@' ("ForkJoinPool-1-worker-3"); informational only (the JDK documents no format).
     */
    private static String carrier() {
        String s = Thread.currentThread().toString();
        int at = s.lastIndexOf('@');
        return at < 0 ? "?" : s.substring(at + 1);
    }

    /** One thread's work on {@code target}, its words drawn from {@code seed}; every word read back is checked. */
    private static void work(Target target, long seed, Tally tally) {
        Random random = Gpu.random(seed);
        int[] input = random.ints(WORDS, -1_000_000, 1_000_000).toArray();
        int eager = random.nextInt(1000);
        int replayed = random.nextInt(1000);
        CudaContext c = target.context();
        LaunchConfig config = LaunchConfig.covering(WORDS, 128);
        Set<String> carriers = ConcurrentHashMap.newKeySet();
        carriers.add(carrier());
        try (Stream s = c.createStream(); DeviceBuffer a = c.allocate(4L * WORDS); DeviceBuffer b = s.allocate(4L * WORDS)) {
            target.streamOrdered().increment();
            tally.allocations.add(2);
            a.asInts().copyFrom(input);
            target.add().launch(s, config, KernelArg.pointer(a), KernelArg.i32(WORDS), KernelArg.i32(eager));
            s.copy(b.bytes(), a.bytes());
            tally.copies.add(2);
            tally.launches.increment();
            carriers.add(carrier());
            Graph graph;
            try (StreamCapture capture = s.beginCapture(CaptureMode.RELAXED)) {
                target.add().launch(s, config, KernelArg.pointer(b), KernelArg.i32(WORDS), KernelArg.i32(replayed));
                graph = capture.end();
            }
            tally.captures.increment();
            try (graph; GraphExec exec = graph.instantiate()) {
                for (int r = 0; r < REPLAYS; r++) {
                    exec.launch(s);
                }
            }
            tally.replays.add(REPLAYS);
            carriers.add(carrier());
            int[] got = new int[WORDS];
            Arrays.fill(got, POISON);
            b.asInts().copyTo(got); // ordered after the replays queued on s
            tally.copies.increment();
            for (int i = 0; i < WORDS; i++) {
                int expected = input[i] + eager + REPLAYS * replayed;
                if (got[i] != expected) {
                    tally.mismatches.increment();
                    if (tally.firstMismatches.size() < 5) {
                        tally.firstMismatches.add("seed " + seed + " on " + c + ": word " + i + " is " + got[i]
                                + ", the CPU gives " + expected);
                    }
                }
            }
        }
        tally.carriers.addAll(carriers);
        if (carriers.size() > 1) {
            tally.movedThreads.increment();
        }
    }

    @Test
    void tenThousandVirtualThreadsOnThePrimaryAndTwoGreenContextsMatchTheCpuAndLeaveNothingBehind() throws Exception {
        CudaContext primary = Gpu.context();
        ModuleImage image = NvrtcLibrary.system().compiler().compile(SOURCE,
                CompileOptions.builder(CompileTarget.ptx(primary.device().capabilities())).programName("add.cu").build())
                .moduleImage();
        try (SmPartition halves = primary.device().partitionSms(primary.smCount() / 2 / 8 * 8, 2);
                KernelLibrary library = primary.loadLibrary(image)) {
            List<Target> targets = new ArrayList<>();
            for (CudaContext c : List.of(primary, halves.group(0), halves.group(1))) {
                targets.add(new Target(c, library.kernel("add", c), new LongAdder()));
            }
            long seed = Gpu.seed();
            for (Target t : targets) {
                work(t, seed, new Tally()); // warm: every path taken once, on this thread
            }
            List<CounterBalance.Snapshot> before = new ArrayList<>();
            for (Target t : targets) {
                t.context().synchronize();
                t.streamOrdered().reset();
                before.add(CounterBalance.Snapshot.of(t.context()));
            }

            Tally tally = new Tally();
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            CountDownLatch done = new CountDownLatch(THREADS);
            long start = System.nanoTime();
            for (int i = 0; i < THREADS; i++) {
                Target t = targets.get(i % targets.size());
                long threadSeed = seed + 1 + i;
                Thread.ofVirtual().name("vt-" + i).start(() -> {
                    try {
                        work(t, threadSeed, tally);
                    } catch (Throwable e) { // collected, and asserted below
                        failures.add(e);
                    } finally {
                        done.countDown();
                    }
                });
            }
            assertTrue(done.await(ALL_DONE.toSeconds(), TimeUnit.SECONDS),
                    () -> done.getCount() + " of " + THREADS + " threads still run after " + ALL_DONE + " (a deadlock?)");
            double seconds = (System.nanoTime() - start) / 1e9;
            assertEquals(List.of(), failures.stream().limit(5).map(String::valueOf).toList(),
                    failures.size() + " threads failed (seed " + seed + ")");
            assertEquals(0, tally.mismatches.sum(), () -> "words that differ from the CPU:\n"
                    + String.join("\n", tally.firstMismatches));

            for (int i = 0; i < targets.size(); i++) {
                CudaContext c = targets.get(i).context();
                c.synchronize();
                c.reap();
                List<String> unbalanced = CounterBalance.violations(before.get(i), CounterBalance.Snapshot.of(c),
                        targets.get(i).streamOrdered().sum());
                assertTrue(unbalanced.isEmpty(), () -> c + ": the counters (live owners per kind among them) are not back "
                        + "at their baseline or do not add up:\n" + String.join("\n", unbalanced));
            }
            assertEquals(THREADS, tally.captures.sum());
            assertEquals((long) REPLAYS * THREADS, tally.replays.sum());
            System.out.printf("VIRTUAL-THREADS %d threads on %d contexts: %d launches, %d copies, %d allocations, "
                    + "%d captures, %d replays; %d mismatches; live owners back to baseline; %.1f s; %d carriers, %d threads "
                    + "resumed on another carrier than they began on%n", THREADS, targets.size(), tally.launches.sum(),
                    tally.copies.sum(), tally.allocations.sum(), tally.captures.sum(), tally.replays.sum(),
                    tally.mismatches.sum(), seconds,
                    tally.carriers.size(), tally.movedThreads.sum());
            for (Target t : targets) {
                t.add().close();
            }
        }
    }
}
