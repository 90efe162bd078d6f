package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrowsExactly;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.graph.SimulatedGraphs.Op;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;

/**
 * Random sequences of captures, re-captures, aborts, resets, replays and group retirements on the
 * simulated driver, with driver failures injected at every step and a GPU that is sometimes busy,
 * checked after each step against a plain model: phase, segments run in capture order, counts,
 * open executables, and (once the GPU caught up and retirement ran) no graph or executable alive
 * that no segment holds.
 */
class GraphLifecycleChainTest {

    private static final int GROUPS = 2;
    private static final int SLOTS_PER_GROUP = 2;

    @Property(tries = 150)
    void lifecyclesFollowTheModel(@ForAll("chains") ActionChain<World> chain) {
        chain.run().tearDown();
    }

    @Provide
    Arbitrary<ActionChain<World>> chains() {
        Arbitrary<Integer> slot = Arbitraries.integers().between(0, GROUPS * SLOTS_PER_GROUP - 1);
        Arbitrary<Boolean> rarely = Arbitraries.integers().between(0, 4).map(n -> n == 0);
        return ActionChain.startWith(World::new)
                .withAction(3, action(Combinators.combine(slot, Arbitraries.integers().between(-1, 2), rarely)
                        .as((s, index, fail) -> Transformer.mutate(
                                "begin slot " + s + (index < 0 ? "" : " recapture " + index) + (fail ? " failing" : ""),
                                w -> w.begin(s, index, fail)))))
                .withAction(3, dependent(w -> Combinators.combine(mostlyCapturing(w, slot),
                                Arbitraries.integers().between(0, 2),
                                Arbitraries.of(null, null, null, Op.END, Op.INSTANTIATE, Op.UPDATE, Op.UPLOAD), rarely)
                        .as((s, topology, fault, destroyFails) -> Transformer.mutate(
                                "end slot " + s + " topology " + topology + (fault == null ? "" : " failing " + fault)
                                        + (destroyFails ? " and destroyGraph" : ""),
                                x -> x.end(s, topology, fault, destroyFails)))))
                .withAction(1, dependent(w -> Combinators.combine(mostlyCapturing(w, slot),
                                Arbitraries.of(null, null, Op.END, Op.DESTROY_GRAPH))
                        .as((s, fault) -> Transformer.mutate(
                                "abort slot " + s + (fault == null ? "" : " failing " + fault),
                                x -> x.abort(s, fault)))))
                .withAction(2, action(Arbitraries.of(null, null, Op.DESTROY_GRAPH, Op.DESTROY_EXEC)
                        .map(fault -> Transformer.mutate("retirement runs" + (fault == null ? "" : " failing " + fault),
                                w -> w.reap(fault)))))
                .withAction(2, action(Arbitraries.just(Transformer.mutate("the GPU is busy", World::busy))))
                .withAction(1, action(slot.map(s -> Transformer.mutate("reset slot " + s, w -> w.reset(s)))))
                .withAction(2, action(Combinators.combine(slot, Arbitraries.integers().between(-1, 3))
                        .as((s, failAt) -> Transformer.mutate(
                                "replay slot " + s + (failAt < 0 ? "" : " launch " + failAt + " failing"),
                                w -> w.replay(s, failAt)))))
                .withAction(2, action(Combinators.combine(slot, Arbitraries.integers().between(-1, 3))
                        .as((s, index) -> Transformer.mutate("replay slot " + s + " segment " + index,
                                w -> w.replaySegment(s, index)))))
                .withAction(1, action(Arbitraries.integers().between(0, GROUPS - 1)
                        .map(o -> Transformer.mutate("retire group " + o, w -> w.retire(o)))))
                .withMaxTransformations(40);
    }

    private static Action.Independent<World> action(Arbitrary<Transformer<World>> transformers) {
        return () -> transformers;
    }

    private static Action.Dependent<World> dependent(Function<World, Arbitrary<Transformer<World>>> transformers) {
        return transformers::apply;
    }

    /** Ending or aborting a capture that is open is the interesting case; a stray one checks refusal. */
    private static Arbitrary<Integer> mostlyCapturing(World world, Arbitrary<Integer> anySlot) {
        List<Integer> capturing = new ArrayList<>();
        for (int s = 0; s < world.models.size(); s++) {
            if (world.models.get(s).capturing()) {
                capturing.add(s);
            }
        }
        if (capturing.isEmpty()) {
            return anySlot;
        }
        return Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.of(capturing)), Tuple.of(1, anySlot));
    }

    /** The system under test, the simulated driver and the model, side by side. */
    static final class World {
        final SimulatedGraphs gpu = new SimulatedGraphs();
        final GraphLifecycles graphs = new GraphLifecycles();
        final List<SlotGroup> groups = new ArrayList<>();
        final List<GraphSlot> slots = new ArrayList<>();
        final List<Model> models = new ArrayList<>();
        /** The slot each label was captured by. */
        final Map<Integer, Integer> slotOfLabel = new HashMap<>();
        int nextLabel = 1;
        /** The simulated GPU holds every stream's work until retirement runs. */
        boolean busy;

        World() {
            for (int o = 0; o < GROUPS; o++) {
                SlotGroup group = graphs.registerGroup("group-" + o);
                groups.add(group);
                for (int s = 0; s < SLOTS_PER_GROUP; s++) {
                    slots.add(group.slot("slot-" + s));
                    models.add(new Model());
                    gpu.stream(stream(slots.size() - 1));
                    replayStream(slots.size() - 1);
                }
            }
        }

        /** The stream slot {@code slot} captures on. */
        private static String stream(int slot) {
            return "stream-" + slot;
        }

        /**
         * The stream slot {@code slot} replays on: another than its capture stream, where a replay
         * during a re-capture would be recorded into the capture instead of running.
         */
        private Stream replayStream(int slot) {
            return gpu.stream("replay-" + slot);
        }

        void begin(int s, int index, boolean fail) {
            Model m = models.get(s);
            Class<? extends Throwable> expected = null;
            if (m.retired || m.capturing()) {
                expected = IllegalStateException.class;
            } else if (index >= m.labels.size()) {
                expected = IndexOutOfBoundsException.class;
            } else if (fail) {
                expected = CudaException.class;
                gpu.failNext(Op.BEGIN);
            }
            GraphSlot slot = slots.get(s);
            run(expected, index < 0
                    ? () -> slot.beginCapture(gpu.stream(stream(s)), CaptureMode.GLOBAL)
                    : () -> slot.beginRecapture(index, gpu.stream(stream(s)), CaptureMode.GLOBAL));
            if (expected == null) {
                m.target = index;
            }
            check();
        }

        /**
         * With {@code destroyFails}, destroying a graph the step drops fails too: the outcome must
         * not change, retirement retries it.
         */
        void end(int s, int topology, Op fault, boolean destroyFails) {
            Model m = models.get(s);
            int label = nextLabel++;
            slotOfLabel.put(label, s);
            if (fault != null) {
                gpu.failNext(fault);
            }
            if (destroyFails) {
                gpu.failNext(Op.DESTROY_GRAPH);
            }
            if (m.retired || !m.capturing()) {
                run(IllegalStateException.class, () -> gpu.endCapture(slots.get(s), stream(s), topology, label));
                check();
                return;
            }
            int target = m.target;
            m.target = null;
            boolean inPlace = target >= 0 && m.topologies.get(target) == topology;
            // The segment's executable refuses; the spare, of an earlier shape, may take it.
            boolean spareTakes = target >= 0 && !inPlace && m.spareTopology != null && m.spareTopology == topology;
            boolean fails = fault == Op.END
                    || fault == Op.UPDATE && target >= 0
                    || (fault == Op.INSTANTIATE || fault == Op.UPLOAD) && !inPlace && !spareTakes;
            Class<? extends Throwable> failure = fault == Op.END
                    ? CaptureInvalidatedException.class
                    : CudaException.class;
            run(fails ? failure : null, () -> gpu.endCapture(slots.get(s), stream(s), topology, label));
            if (!fails) {
                m.captures++;
                if (target < 0) {
                    m.labels.add(label);
                    m.topologies.add(topology);
                    m.updated.add(false);
                } else {
                    int replacedTopology = m.topologies.get(target);
                    boolean replacedUpdated = m.updated.get(target);
                    m.labels.set(target, label);
                    m.topologies.set(target, topology);
                    // An executable updated since it was instantiated holds its origin graph too.
                    m.updated.set(target, inPlace || spareTakes);
                    if (inPlace) {
                        m.updates++;
                    } else {
                        m.spareTopology = replacedTopology; // the replaced executable is the spare now
                        m.spareUpdated = replacedUpdated;
                        if (spareTakes) {
                            m.spareUpdates++;
                        } else {
                            m.reinstantiations++;
                        }
                    }
                }
            }
            check();
        }

        void abort(int s, Op fault) {
            Model m = models.get(s);
            if (fault != null) {
                gpu.failNext(fault);
            }
            boolean refused = m.retired || !m.capturing();
            run(refused ? IllegalStateException.class : null, () -> gpu.abortCapture(slots.get(s), stream(s)));
            if (!refused) {
                m.target = null;
                m.aborts++;
            }
            check();
        }

        void reset(int s) {
            Model m = models.get(s);
            if (m.retired || m.capturing()) {
                run(IllegalStateException.class, slots.get(s)::reset);
            } else {
                assertEquals(!m.labels.isEmpty(), slots.get(s).reset());
                m.clear();
                m.resets++;
            }
            check();
        }

        void replay(int s, int failAt) {
            Model m = models.get(s);
            if (failAt >= 0) {
                gpu.failAfter(Op.LAUNCH, failAt);
            }
            if (m.retired || m.labels.isEmpty()) {
                run(IllegalStateException.class, () -> slots.get(s).replay(replayStream(s)));
            } else if (failAt >= 0 && failAt < m.labels.size()) {
                CudaException failure = assertThrowsExactly(CudaException.class,
                        () -> slots.get(s).replay(replayStream(s)));
                SimulatedGraphs.assertFailedIn(Op.LAUNCH, failure);
                m.queued.addAll(m.labels.subList(0, failAt)); // check() sees that exactly these ran
                m.launches += failAt;
            } else {
                slots.get(s).replay(replayStream(s));
                m.queued.addAll(m.labels);
                m.replays++;
                m.launches += m.labels.size();
            }
            check();
        }

        void replaySegment(int s, int index) {
            Model m = models.get(s);
            if (m.retired || m.labels.isEmpty()) {
                run(IllegalStateException.class, () -> slots.get(s).replaySegment(index, replayStream(s)));
            } else if (index < 0 || index >= m.labels.size()) {
                run(IndexOutOfBoundsException.class, () -> slots.get(s).replaySegment(index, replayStream(s)));
            } else {
                slots.get(s).replaySegment(index, replayStream(s));
                m.queued.add(m.labels.get(index));
                m.replays++;
                m.launches++;
            }
            check();
        }

        void retire(int o) {
            List<Model> owned = models.subList(o * SLOTS_PER_GROUP, (o + 1) * SLOTS_PER_GROUP);
            boolean refused = owned.stream().anyMatch(Model::capturing);
            run(refused ? IllegalStateException.class : null, groups.get(o)::retire);
            if (!refused) {
                for (Model m : owned) {
                    m.retired = true;
                    m.clear();
                }
            }
            check();
        }

        /** The GPU keeps every stream's work queued: launches run, and retirement proceeds, only once it catches up. */
        void busy() {
            gpu.holdAll();
            busy = true;
            check();
        }

        /** The GPU catches up and retirement frees what it can; a failed free is retried later. */
        void reap(Op fault) {
            gpu.releaseAll();
            busy = false;
            if (fault != null) {
                gpu.failNext(fault);
            }
            gpu.ctx.reap();
            check();
        }

        /** Retires everything: every handle ever created must now be destroyed, each exactly once. */
        void tearDown() {
            for (int s = 0; s < slots.size(); s++) {
                if (models.get(s).capturing()) {
                    slots.get(s).abortCapture();
                }
            }
            groups.forEach(SlotGroup::retire);
            gpu.releaseAll();
            gpu.ctx.reap();
            assertEquals(0, gpu.pendingRetirements(), "retirements pending after retiring everything");
            assertEquals(0, gpu.liveExecs(), "live executables after retiring everything");
            assertEquals(0, gpu.liveGraphs(), "live graphs after retiring everything");
            gpu.close();
        }

        private void run(Class<? extends Throwable> expected, Runnable call) {
            if (expected == null) {
                call.run();
                return;
            }
            Throwable thrown = assertThrowsExactly(expected, call::run);
            if (expected == IllegalStateException.class) {
                // The slot's or its group's refusal, not a use after close further down.
                assertTrue(thrown.getMessage().startsWith("group '"), thrown.getMessage());
            }
        }

        private void check() {
            // A fault that the step never reached must not fire in a later one; and a safe point
            // passes, where retirement retries what failed.
            gpu.clearFaults();
            gpu.ctx.reap();
            List<Integer> ran = busy ? List.of() : gpu.takeLaunches();
            GraphCounters total = GraphCounters.ZERO;
            int executables = 0;
            int segmentGraphs = 0;
            for (int s = 0; s < slots.size(); s++) {
                Model m = models.get(s);
                GraphSlot slot = slots.get(s);
                assertEquals(m.phase(), slot.phase(), "phase of slot " + s);
                assertEquals(m.labels.size(), slot.segmentCount(), "segments of slot " + s);
                assertEquals(m.counts(), slot.counters(), "counts of slot " + s);
                assertEquals(m.capturing(), gpu.capturing(stream(s)), "stream of slot " + s + " capturing");
                if (!busy) {
                    int slotIndex = s;
                    assertEquals(m.queued, ran.stream().filter(l -> slotOfLabel.get(l) == slotIndex).toList(),
                            "segments slot " + s + " ran, in order");
                    m.queued.clear();
                }
                total = total.plus(m.counts());
                executables += m.labels.size() + (m.spareTopology == null ? 0 : 1);
                segmentGraphs += m.graphs();
            }
            assertEquals(total, graphs.counters());
            assertEquals(executables, gpu.ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC), "open executables: segments and spares");
            assertEquals(0, gpu.ctx.diagnostics().liveOwners(OwnerKind.GRAPH), "a slot closes every graph it installs");
            if (!busy && gpu.pendingRetirements() == 0) {
                assertEquals(executables, gpu.liveExecs(), "live executables");
                assertEquals(segmentGraphs, gpu.liveGraphs(), "live graphs");
            } else {
                assertTrue(gpu.liveExecs() >= executables, "live executables");
                assertTrue(gpu.liveGraphs() >= segmentGraphs, "live graphs");
            }
            assertEquals(List.of(), gpu.violations());
            long liveGroups = models.stream().filter(m -> !m.retired).count() / SLOTS_PER_GROUP;
            assertEquals(liveGroups, graphs.liveGroups());
        }
    }

    /** What one slot should hold and have counted. */
    static final class Model {
        final List<Integer> labels = new ArrayList<>();
        final List<Integer> topologies = new ArrayList<>();
        /** Per segment: updated in place since instantiated, so it holds its origin graph too. */
        final List<Boolean> updated = new ArrayList<>();
        /** Labels this slot's replays launched that the GPU has not been seen running yet, in launch order. */
        final List<Integer> queued = new ArrayList<>();
        /** null when not capturing; -1 for an appending capture; else the segment re-captured. */
        Integer target;
        /** The topology of the spare executable's graph; null when the slot keeps none. */
        Integer spareTopology;
        /** Whether the spare was updated since it was instantiated, so it holds its origin graph too. */
        boolean spareUpdated;
        boolean retired;
        long captures;
        long replays;
        long launches;
        long updates;
        long spareUpdates;
        long reinstantiations;
        long aborts;
        long resets;

        boolean capturing() {
            return target != null;
        }

        /** Graphs the segments and the spare hold: each its last capture, and an updated one its origin too. */
        int graphs() {
            int spare = spareTopology == null ? 0 : spareUpdated ? 2 : 1;
            return labels.size() + (int) updated.stream().filter(u -> u).count() + spare;
        }

        void clear() {
            labels.clear();
            topologies.clear();
            updated.clear();
            spareTopology = null; // reset and retirement close the spare
            spareUpdated = false;
        }

        SlotPhase phase() {
            if (retired) {
                return SlotPhase.RETIRED;
            }
            if (capturing()) {
                return SlotPhase.CAPTURING;
            }
            return labels.isEmpty() ? SlotPhase.IDLE : SlotPhase.READY;
        }

        GraphCounters counts() {
            return new GraphCounters(captures, replays, launches, updates, spareUpdates, reinstantiations, aborts, resets);
        }
    }
}
