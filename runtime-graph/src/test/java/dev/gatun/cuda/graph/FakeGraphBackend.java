package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A CPU stand-in for the driver's graph calls. It keeps every live graph and executable, so a
 * test can assert that nothing leaked; records misuse the real driver would punish (launching or
 * destroying a freed handle, ending a capture that is not open) as violations; and fails any
 * chosen call on demand. A captured graph carries a topology, which decides whether an in-place
 * update applies, and a label, which launches report so a test can check what ran, in which order.
 * As on the driver, a graph must outlive the executables instantiated from it (their nodes are
 * named by its nodes), even after they were updated to run another graph.
 */
final class FakeGraphBackend implements GraphBackend<String> {

    enum Op { BEGIN, END, INSTANTIATE, UPDATE, UPLOAD, LAUNCH, DESTROY_GRAPH, DESTROY_EXEC }

    static final class FakeDriverException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        final Op op;

        FakeDriverException(Op op) {
            super("injected driver failure in " + op);
            this.op = op;
        }
    }

    private record Graph(int topology, int label) {
    }

    private static final class Exec {
        final int topology;
        /** The graph it was instantiated from: as on the driver, it must outlive the executable. */
        final long origin;
        int label;

        Exec(int topology, long origin, int label) {
            this.topology = topology;
            this.origin = origin;
            this.label = label;
        }
    }

    private long nextHandle = 0x1000;
    private final Map<Long, Graph> graphs = new HashMap<>();
    private final Map<Long, Exec> execs = new HashMap<>();
    private final Set<String> capturing = new HashSet<>();
    /** Per op: how many more calls succeed before one fails. */
    private final Map<Op, Integer> faults = new EnumMap<>(Op.class);
    private final List<String> violations = new ArrayList<>();
    private final List<Integer> launches = new ArrayList<>();
    private volatile Runnable beforeLaunch = () -> { };
    private int nextTopology;
    private int nextLabel;

    /** The call of {@code op} after {@code successesFirst} successful ones throws. */
    synchronized void failOn(Op op, int successesFirst) {
        faults.put(op, successesFirst);
    }

    synchronized void clearFaults() {
        faults.clear();
    }

    /** What the next ended capture records. */
    synchronized void nextCapture(int topology, int label) {
        nextTopology = topology;
        nextLabel = label;
    }

    synchronized int liveGraphs() {
        return graphs.size();
    }

    synchronized int liveExecs() {
        return execs.size();
    }

    synchronized boolean capturing(String stream) {
        return capturing.contains(stream);
    }

    synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    /** Labels of the executables launched since the last call, in launch order. */
    synchronized List<Integer> takeLaunches() {
        List<Integer> taken = List.copyOf(launches);
        launches.clear();
        return taken;
    }

    /** The label of the executable's current contents. */
    synchronized int label(MemorySegment exec) {
        return execs.get(exec.address()).label;
    }

    synchronized boolean isLiveExec(MemorySegment exec) {
        return execs.containsKey(exec.address());
    }

    @Override
    public synchronized void beginCapture(String stream, CaptureMode mode) {
        maybeFail(Op.BEGIN);
        if (!capturing.add(stream)) {
            throw violation("beginCapture on " + stream + ", which is already capturing");
        }
    }

    @Override
    public synchronized MemorySegment endCapture(String stream) {
        if (!capturing.remove(stream)) {
            throw violation("endCapture on " + stream + ", which is not capturing");
        }
        // Like an invalidated capture: the stream leaves capture mode and no graph comes back.
        maybeFail(Op.END);
        long handle = nextHandle++;
        graphs.put(handle, new Graph(nextTopology, nextLabel));
        return MemorySegment.ofAddress(handle);
    }

    @Override
    public synchronized MemorySegment instantiate(MemorySegment graph) {
        Graph source = liveGraph(graph, "instantiate");
        maybeFail(Op.INSTANTIATE);
        long handle = nextHandle++;
        execs.put(handle, new Exec(source.topology(), graph.address(), source.label()));
        return MemorySegment.ofAddress(handle);
    }

    @Override
    public synchronized boolean tryUpdate(MemorySegment exec, MemorySegment graph) {
        Exec target = liveExec(exec, "tryUpdate");
        Graph source = liveGraph(graph, "tryUpdate");
        maybeFail(Op.UPDATE);
        if (target.topology != source.topology()) {
            return false;
        }
        target.label = source.label();
        return true;
    }

    @Override
    public synchronized void upload(MemorySegment exec, String stream) {
        liveExec(exec, "upload");
        maybeFail(Op.UPLOAD);
    }

    /**
     * Runs before every launch, outside this fake's lock: a test can make launches slow (yield)
     * to widen the window in which a racing mutation could free what is being launched.
     */
    void beforeEachLaunch(Runnable hook) {
        beforeLaunch = hook;
    }

    @Override
    public void launch(MemorySegment exec, String stream) {
        beforeLaunch.run();
        synchronized (this) {
            Exec launched = liveExec(exec, "launch");
            maybeFail(Op.LAUNCH);
            launches.add(launched.label);
        }
    }

    @Override
    public synchronized void destroyGraph(MemorySegment graph) {
        liveGraph(graph, "destroyGraph");
        for (Exec e : execs.values()) {
            if (e.origin == graph.address()) {
                throw violation("destroyGraph on graph 0x" + Long.toHexString(graph.address())
                        + ", which a live executable was instantiated from");
            }
        }
        maybeFail(Op.DESTROY_GRAPH);
        graphs.remove(graph.address());
    }

    @Override
    public synchronized void destroyExec(MemorySegment exec) {
        liveExec(exec, "destroyExec");
        maybeFail(Op.DESTROY_EXEC);
        execs.remove(exec.address());
    }

    private Graph liveGraph(MemorySegment graph, String call) {
        Graph found = graphs.get(graph.address());
        if (found == null) {
            throw violation(call + " on graph 0x" + Long.toHexString(graph.address()) + ", which is not live");
        }
        return found;
    }

    private Exec liveExec(MemorySegment exec, String call) {
        Exec found = execs.get(exec.address());
        if (found == null) {
            throw violation(call + " on exec 0x" + Long.toHexString(exec.address()) + ", which is not live");
        }
        return found;
    }

    private void maybeFail(Op op) {
        Integer remaining = faults.get(op);
        if (remaining == null) {
            return;
        }
        if (remaining == 0) {
            faults.remove(op);
            throw new FakeDriverException(op);
        }
        faults.put(op, remaining - 1);
    }

    private IllegalStateException violation(String what) {
        violations.add(what);
        return new IllegalStateException("driver misuse: " + what);
    }
}
