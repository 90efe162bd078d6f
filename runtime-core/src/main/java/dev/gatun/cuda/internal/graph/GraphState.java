package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One root graph and everything it keeps: its handle, the bodies of the conditional nodes inside
 * it, what it holds (one {@link Holds} for the root and all its bodies) and what each node added
 * by hand names, how many executables of it the driver has, and the captures recording into it.
 * Its retirement destroys the handle (the driver destroys the bodies with it) and only then lets
 * go of what it holds. See the package's invariants.
 */
public final class GraphState extends NativeResource {

    final MemorySegment handle;
    final Holds holds;
    /** Serializes adding nodes, cloning and instantiating, so each sees a whole graph. */
    final Object building = new Object();
    /** How many nodes were added to the root by hand (guarded by {@link #building}): the next one's index. */
    int added;
    /** Every conditional-node body inside this graph, at any depth (guarded by {@link #building}). */
    final List<Body> bodies = new ArrayList<>();
    /** Conditional handles created in this graph or its bodies that no node uses yet, by value (guarded by {@link #building}). */
    final Map<Long, String> unusedHandles = new LinkedHashMap<>();
    /** The allocations its capture made, when it has memory nodes; else null. */
    final GraphAllocations memory;
    /** The capture arena its allocations came from, whose replays are ordered; else null. */
    final ArenaSpace arena;
    /**
     * Whether everything it holds was named by nodes added by hand (it was made empty): only
     * then may removing a node let go of what no other node names. Set before it is shared.
     */
    private boolean handBuilt;
    /** Per node added by hand (by handle, in this graph or a body), the owners it names (guarded by {@link #building}). */
    final Map<Long, List<NativeResource>> namedByNode = new HashMap<>();
    /**
     * How many executables of it exist in the driver (guarded by {@link #building}): made and
     * not yet destroyed. With memory nodes, the driver allows one.
     */
    int executables;
    /** How many stream captures record into it or a body inside it now (guarded by {@link #building}). */
    int capturesOpen;
    /** Why it can never be instantiated (a capture into a body failed part way, ...), or null (guarded by {@link #building}). */
    String unusable;
    /** Set when the driver destroyed the handle itself (the capture that recorded it was invalidated). */
    private volatile boolean destroyedByDriver;

    /** What the graph knows of one body of a conditional node inside it (each field guarded by its {@link #building}). */
    static final class Body {
        final String name;
        /** How many nodes were added to the body. */
        int nodes;
        /** How many of them were removed since. */
        int removed;
        /** Whether a stream capture records into it now. */
        boolean capturing;

        Body(String name) {
            this.name = name;
        }
    }

    private GraphState(ContextState context, MemorySegment handle, Holds holds, GraphAllocations memory,
            ArenaSpace arena) {
        super(context, OwnerKind.GRAPH);
        this.handle = handle;
        this.holds = holds;
        this.memory = memory;
        this.arena = arena;
    }

    /** An empty graph ({@code cuGraphCreate}) built by hand: what it holds, its nodes name. */
    public static GraphState create(ContextState context) {
        GraphState g = new GraphState(context, context.calls().graphBuilding().create(), new Holds(), null, null);
        g.handBuilt = true; // before anyone else sees it
        return g;
    }

    /**
     * The graph a capture recorded ({@code handle}), holding {@code holds}; {@code memory} null when
     * its capture made no allocation node, {@code arena} null without a capture arena.
     */
    public static GraphState captured(ContextState context, MemorySegment handle, Holds holds, GraphAllocations memory,
            ArenaSpace arena) {
        return new GraphState(context, handle, holds, memory, arena);
    }

    /**
     * The graph a capture records into, for its conditional handles and nodes, made once the
     * capture first needs it: it holds what the capture holds ({@code holds}, shared), and a hold
     * on itself until the capture is over ({@link #captureOver}), so closing it meanwhile never
     * destroys a graph the driver still records into.
     */
    static GraphState ofCapture(ContextState context, MemorySegment handle, Holds holds) {
        GraphState g = new GraphState(context, handle, holds, null, null);
        synchronized (g.building) {
            g.capturesOpen++;
        }
        g.hold();
        return g;
    }

    /** Retires a graph no one will use (what an aborted capture recorded). */
    static void discard(ContextState context, MemorySegment handle) {
        new GraphState(context, handle, new Holds(), null, null).close();
    }

    /**
     * The capture that made this graph ({@link #ofCapture}) is over: {@code destroyedByDriver} when
     * the driver destroyed the graph with it (an invalidated capture), so its retirement makes no
     * destroy call. The caller closes the graph's owner when it is to go, then {@linkplain #unhold()
     * lets go of} the capture's hold.
     */
    public void captureOver(boolean destroyedByDriver) {
        synchronized (building) {
            capturesOpen--;
        }
        this.destroyedByDriver = destroyedByDriver;
    }

    /** {@return a copy ({@code cuGraphClone}) holding what this graph holds} See {@code Graph.copy}. */
    public GraphState copy() {
        if (memory != null) {
            throw new IllegalStateException(identity() + " has memory allocation or free nodes, and the driver cannot "
                    + "clone such a graph; capture it again instead");
        }
        synchronized (building) {
            if (!bodies.isEmpty()) { // every conditional node has at least one body
                throw new IllegalStateException(identity() + " has conditional nodes, and the driver cannot clone such "
                        + "a graph (cuGraphClone: CUDA_ERROR_NOT_SUPPORTED); build it again with the same add calls "
                        + "instead");
            }
            checkConditionals();
            MemorySegment clone = context.calls().graphBuilding().cloneGraph(handle);
            Holds copied = new Holds();
            copied.addAll(holds); // its nodes bake in the same addresses and kernels
            return new GraphState(context, clone, copied, null, null);
        }
    }

    /** {@return whether it has memory allocation or free nodes (its capture allocated on its stream)} */
    public boolean hasMemoryNodes() {
        return memory != null;
    }

    /** {@return what it holds} */
    public Holds holds() {
        return holds;
    }

    boolean handBuilt() {
        return handBuilt;
    }

    /**
     * Refuses, before the driver does, a second executable of a graph with memory nodes.
     * Called under {@link #building}.
     */
    void checkOneExecutable() {
        if (memory != null && executables > 0) {
            throw new IllegalStateException(identity() + " has memory allocation or free nodes, and the driver "
                    + "lets such a graph have one executable at a time: close the one it has; it is destroyed once "
                    + "its last launch has completed (at the next reap), and then this graph can be instantiated again");
        }
    }

    /** An executable of this graph was destroyed (or given up by retirement, which leaves it to the driver). */
    void executableDestroyed() {
        synchronized (building) {
            executables--;
        }
    }

    /**
     * Refuses, before the driver sees it, a graph the driver would refuse or run forever:
     * a conditional body without nodes, or a conditional handle that no node uses. Called
     * under {@link #building}.
     */
    void checkConditionals() {
        if (unusable != null) {
            throw new IllegalStateException(identity() + " cannot be instantiated: " + unusable);
        }
        if (capturesOpen > 0) {
            throw new IllegalStateException("a stream capture still records into " + identity() + " or a body in it; "
                    + "the driver instantiates it only once that capture has ended: end it first");
        }
        for (Body b : bodies) {
            if (b.nodes == b.removed) {
                throw new IllegalStateException(b.name + " has no nodes; add at least one node to every body of "
                        + "a conditional node first (a WHILE body must also be able to end its loop)");
            }
        }
        if (!unusedHandles.isEmpty()) {
            throw new IllegalStateException("no conditional node uses " + String.join(", ", unusedHandles.values())
                    + "; the driver refuses a graph with an unused handle: add a node that uses it");
        }
    }

    /** What instantiation refuses (see {@link #checkConditionals}), under the building lock, for an update to this graph. */
    void checkInstantiable() {
        synchronized (building) {
            checkConditionals();
        }
    }

    /** Marks the graph unusable for {@code why}, unless it already is (under {@link #building}). */
    void markUnusable(String why) {
        if (unusable == null) {
            unusable = why;
        }
    }

    @Override
    protected Retirement.Release howToFree() {
        if (destroyedByDriver) {
            return Retirement.Release.withoutDriver(holds::releaseAll); // nothing of it is left in the driver
        }
        return () -> {
            // Nothing is launched from a graph itself, and the executables made from it hold
            // it until they are destroyed: no work and no executable uses it any more.
            int r = context.calls().graphs().destroy(handle);
            holds.releaseAll(); // a graph is never launched: what it baked in is free to go
            return r;
        };
    }

    @Override
    protected boolean synchronizingFree() {
        return true; // it may free device memory the graph's nodes own
    }

    @Override
    public String identity() {
        return "Graph#" + id() + " (device " + context.device() + ")";
    }
}
