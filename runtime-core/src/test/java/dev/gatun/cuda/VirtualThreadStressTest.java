package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Carriers;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/**
 * Thousands of virtual threads on two carriers work at once on the primary context and on two
 * green contexts of the one simulated device: each allocates (from the context and in its
 * stream's order), uploads, launches, copies device to device, captures a launch (relaxed: see
 * {@link CaptureMode}), replays it, reads back and checks every word. The simulated driver keeps
 * the current context per carrier and refuses any call made under the wrong one; a thread moves
 * between the carriers at every park (contended locks, the yields between its steps), so the
 * calls of one thread run on both carriers, with any of the three contexts left current there by
 * the others. Afterwards nothing is left live: every owner count, the simulated driver's live
 * handles and the contexts' live bytes are back to their baseline.
 */
class VirtualThreadStressTest {

    private static final int THREADS = 2_000;
    private static final int WORDS = 64;
    private static final int REPLAYS = 3;
    /** What a read-back buffer holds before the copy: a word no check expects. */
    private static final int POISON = 0xDEAD_BEEF;
    /** The deadlock guard of the whole run (it takes seconds), never a timing assertion. */
    private static final Duration ALL_DONE = Duration.ofMinutes(2);

    private final Simulated sim = new Simulated();

    /** What the threads did, summed. */
    private static final class Tally {
        final LongAdder launches = new LongAdder();
        final LongAdder copies = new LongAdder();
        final LongAdder allocations = new LongAdder();
        final LongAdder captures = new LongAdder();
        final LongAdder replays = new LongAdder();
        final LongAdder mismatches = new LongAdder();
    }

    /** One context and its add kernel ({@code p[i] += v} for {@code n} words). */
    private record Target(CudaContext context, Kernel add) {
    }

    /**
     * What must be back to where it was: the owners of each context (but its staging blocks: pinned
     * memory the context keeps for later synchronous copies, up to a bound, more of it after many
     * at once), its live bytes, and the driver's live handles.
     */
    private record Baseline(List<Map<OwnerKind, Long>> owners, List<Long> bytesLive, int streams, int deviceAllocations,
            int graphs, int graphExecs, int modules) {

        static Baseline of(Simulated sim, List<CudaContext> contexts) {
            List<Map<OwnerKind, Long>> owners = new ArrayList<>();
            List<Long> bytes = new ArrayList<>();
            for (CudaContext c : contexts) {
                c.synchronize(); // the queued frees run, and retirement reaps what they released
                Map<OwnerKind, Long> live = new EnumMap<>(OwnerKind.class);
                for (OwnerKind kind : OwnerKind.values()) {
                    if (kind != OwnerKind.STAGING) {
                        live.put(kind, c.diagnostics().liveOwners(kind));
                    }
                }
                owners.add(live);
                bytes.add(c.diagnostics().counters().liveBytes());
                assertEquals(0, c.diagnostics().counters().pendingRetirements(), c + " has retirements pending");
            }
            return new Baseline(owners, bytes, sim.gpu.liveStreams(), sim.gpu.liveDeviceAllocations(),
                    sim.gpu.liveGraphs(), sim.gpu.liveGraphExecs(), sim.gpu.liveModules());
        }
    }

    /** One thread's work on {@code target}, its inputs drawn from {@code seed}; every word read back is checked. */
    private static void work(Target target, long seed, Tally tally, Set<String> carriersSeen) {
        Random random = new Random(seed);
        int[] input = random.ints(WORDS, -1_000_000, 1_000_000).toArray();
        int eager = random.nextInt(1000);
        int replayed = random.nextInt(1000);
        CudaContext c = target.context();
        LaunchConfig config = LaunchConfig.of(1, WORDS);
        carriersSeen.add(Carriers.current().getName());
        try (Stream s = c.createStream(); DeviceBuffer a = c.allocate(4L * WORDS); DeviceBuffer b = s.allocate(4L * WORDS)) {
            tally.allocations.add(2);
            a.asInts().copyFrom(input);
            target.add().launch(s, config, KernelArg.pointer(a), KernelArg.i32(WORDS), KernelArg.i32(eager));
            s.copy(b.bytes(), a.bytes());
            tally.copies.add(2);
            tally.launches.increment();
            Thread.yield(); // a park: the rest may run on the other carrier
            carriersSeen.add(Carriers.current().getName());
            Graph graph;
            try (StreamCapture capture = s.beginCapture(CaptureMode.RELAXED)) {
                target.add().launch(s, config, KernelArg.pointer(b), KernelArg.i32(WORDS), KernelArg.i32(replayed));
                Thread.yield(); // the capture may end on the other carrier
                graph = capture.end();
            }
            tally.captures.increment();
            try (graph; GraphExec exec = graph.instantiate()) {
                for (int r = 0; r < REPLAYS; r++) {
                    exec.launch(s);
                }
            }
            tally.replays.add(REPLAYS);
            carriersSeen.add(Carriers.current().getName());
            int[] got = new int[WORDS];
            Arrays.fill(got, POISON);
            b.asInts().copyTo(got); // ordered after the replays queued on s
            tally.copies.increment();
            for (int i = 0; i < WORDS; i++) {
                if (got[i] != input[i] + eager + REPLAYS * replayed) {
                    tally.mismatches.increment();
                }
            }
        }
    }

    @Test
    void twoThousandVirtualThreadsOnTwoCarriersWorkOnThePrimaryAndTwoGreenContextsAtOnce() throws Exception {
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ModuleImage image = ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32"));
        CudaContext primary = sim.context(); // the device pool off: every allocation and close reaches the driver

        AtomicInteger carrierNumber = new AtomicInteger();
        try (SmPartition partition = primary.device().partitionSms(64, 2, primary.options());
                ExecutorService twoCarriers = Executors.newFixedThreadPool(2,
                        r -> new Thread(r, "carrier-" + carrierNumber.getAndIncrement()))) {
            List<CudaContext> contexts = List.of(primary, partition.group(0), partition.group(1));
            List<Target> targets = new ArrayList<>();
            for (CudaContext c : contexts) {
                c.modules().load("a", image);
                targets.add(new Target(c, c.modules().kernel("a", "add")));
            }
            Tally warm = new Tally();
            for (Target t : targets) {
                work(t, 0, warm, ConcurrentHashMap.newKeySet()); // every class loaded, every path taken once
            }
            assertEquals(0, warm.mismatches.sum());
            Baseline before = Baseline.of(sim, contexts);

            Tally tally = new Tally();
            Thread.Builder.OfVirtual virtualThreads = Carriers.virtualThreadsOn(twoCarriers);
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            CountDownLatch done = new CountDownLatch(THREADS);
            List<Thread> threads = new ArrayList<>(THREADS);
            List<Set<String>> seen = new ArrayList<>(THREADS);
            for (int i = 0; i < THREADS; i++) {
                Target t = targets.get(i % targets.size());
                Set<String> carriersSeen = ConcurrentHashMap.newKeySet();
                seen.add(carriersSeen);
                long seed = i + 1;
                threads.add(virtualThreads.name("vt-" + i).start(() -> {
                    try {
                        work(t, seed, tally, carriersSeen);
                    } catch (Throwable e) { // collected, and asserted below
                        failures.add(e);
                    } finally {
                        done.countDown();
                    }
                }));
            }
            if (!done.await(ALL_DONE.toSeconds(), TimeUnit.SECONDS)) {
                Thread stuck = threads.stream().filter(Thread::isAlive).findFirst().orElseThrow();
                AssertionError e = new AssertionError(done.getCount() + " of " + THREADS + " threads still run after "
                        + ALL_DONE + " (a deadlock?); the first, " + stuck.getName() + ", is " + stuck.getState());
                e.setStackTrace(stuck.getStackTrace());
                throw e;
            }
            assertEquals(List.of(), failures.stream().limit(5).toList(), failures.size() + " threads failed");
            assertEquals(0, tally.mismatches.sum(), "words read back that the CPU reference does not give");
            assertEquals(THREADS, tally.launches.sum());
            assertEquals(3L * THREADS, tally.copies.sum());
            assertEquals(2L * THREADS, tally.allocations.sum());
            assertEquals(THREADS, tally.captures.sum());
            assertEquals((long) REPLAYS * THREADS, tally.replays.sum());
            long moved = seen.stream().filter(s -> s.size() > 1).count();
            assertEquals(Set.of("carrier-0", "carrier-1"), seen.stream().flatMap(Set::stream)
                    .collect(java.util.stream.Collectors.toSet()), "the virtual threads ran on the two carriers only");
            assertTrue(moved > 0, "some thread ran on both carriers (one thread's calls under contexts others left)");
            assertEquals(List.of(), sim.gpu.contextRefusals(), "a call ran without its context current on its carrier");
            assertEquals(List.of(), sim.gpu.violations());
            assertEquals(before, Baseline.of(sim, contexts), "every owner closed and every handle freed");
            for (Target t : targets) {
                t.add().close();
            }
        }
        primary.close();
    }
}
