package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.GraphCalls;
import dev.gatun.cuda.internal.events.GraphInstantiateEvent;
import dev.gatun.cuda.internal.memory.AllocationKind;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import dev.gatun.cuda.internal.memory.OutOfMemoryLadder;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * An executable graph: its handle, the accumulator of what it holds (of every graph it ran and
 * of its node updates), the graph it was instantiated from and the one it runs now, and its
 * launch. Its retirement destroys it once every stream it was launched on passed a fence, and
 * only then lets go of what it holds. See the package's invariants.
 */
public final class ExecState extends NativeResource {

    private static final VarHandle LAUNCHES;

    static {
        try {
            LAUNCHES = MethodHandles.lookup().findVarHandle(ExecState.class, "launches", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e); // the field below exists: cannot happen
        }
    }

    final MemorySegment handle;
    /**
     * The owners its nodes use: of every graph it ran and of its node updates. Pinned memory its
     * copy nodes touch learns from these holds that its host access must wait for this
     * executable's launches (on the streams its usage lists) until they let go of it.
     */
    final Holds holds = new Holds(this);
    /** The graph it was instantiated from; held as long as it lives. */
    final GraphState origin;
    /**
     * Guards current and makes each driver call on the executable (a launch, an upload, an
     * update) exclusive. Taken under a stream's lock by launches; nothing that retires an
     * owner (and so may take a stream's lock) runs under it.
     */
    final Object lock = new Object();
    /** How many nodes had been added to the origin by hand when it was instantiated: the ones it has. */
    final int nodes;
    /** The graph it runs now (at first the origin); held once more on its own. */
    GraphState current;
    /** The origin's allocations, when it has memory nodes (it then runs the origin for life); else null. */
    final GraphAllocations memory;
    /** The origin's capture arena (every graph it runs has the same: updates across arenas are refused); else null. */
    final ArenaSpace arena;
    final GraphCalls calls;
    /** How an arena's replay order queues this executable's launches: made once, so a replay allocates nothing. */
    private final ArenaSpace.Replay replay = this::queue;
    /** Its NVTX label (its identity), when Gatun's ranges are on; else NULL. */
    private final MemorySegment range;
    /**
     * The launches the driver accepted. Counted under {@link #lock}, which every launch holds
     * already (its only writer: an opaque load and store, no atomic update), and read without it
     * by an opaque load: a reader may lag a launch in progress, never sees a torn value, and
     * never sees the count go down.
     */
    @SuppressWarnings("unused") // through LAUNCHES
    private long launches;

    private ExecState(ContextState context, MemorySegment handle, GraphState origin, int nodes) {
        super(context, OwnerKind.GRAPH_EXEC);
        this.handle = handle;
        this.origin = origin;
        this.nodes = nodes;
        this.current = origin;
        this.memory = origin.memory;
        this.arena = origin.arena;
        this.calls = context.calls().graphs();
        this.range = AutomaticRanges.ON ? AutomaticRanges.label(identity()) : MemorySegment.NULL;
    }

    /** An executable the driver made, and how many nodes its graph had then. */
    private record Instantiated(MemorySegment handle, int nodes) {
    }

    /**
     * A new executable of {@code graph} ({@code cuGraphInstantiate}), holding everything the
     * graph holds and the graph itself (as its origin, and as the graph it runs now). A graph
     * with memory nodes that runs out of memory climbs {@code ladder} and is instantiated again.
     * A JFR event {@code dev.gatun.GraphInstantiate} records it.
     */
    public static ExecState instantiate(GraphState graph, OutOfMemoryLadder ladder) {
        GraphInstantiateEvent event = GraphInstantiateEvent.start();
        boolean instantiated = false;
        try {
            ExecState exec = instantiateHeld(graph, ladder);
            instantiated = true;
            return exec;
        } finally {
            if (event != null) {
                event.device = graph.context().device();
                event.instantiated = instantiated;
                event.commit();
            }
        }
    }

    /** See {@link #instantiate}: the origin is held first, and let go again when no executable came of it. */
    private static ExecState instantiateHeld(GraphState graph, OutOfMemoryLadder ladder) {
        graph.checkOpen();
        graph.hold(); // as origin
        Instantiated made;
        try {
            made = instantiate(graph);
        } catch (CudaException e) {
            if (graph.memory == null) {
                graph.unhold();
                throw e;
            }
            made = instantiateAfterLadder(graph, ladder, e);
        } catch (RuntimeException e) {
            graph.unhold();
            throw e;
        }
        ExecState exec = new ExecState(graph.context(), made.handle(), graph, made.nodes());
        graph.hold(); // as the graph it runs now
        exec.holds.addAll(graph.holds);
        return exec;
    }

    /** Instantiates {@code graph} under its monitor: no node is added while the driver copies it. */
    private static Instantiated instantiate(GraphState graph) {
        synchronized (graph.building) {
            graph.checkConditionals();
            graph.checkOneExecutable();
            // With memory nodes, each launch frees what the previous one left allocated (the
            // graph's allocations outlive a launch), so the executable can be launched again.
            MemorySegment handle = graph.context().calls().graphs().instantiate(graph.handle, graph.memory != null);
            graph.executables++;
            return new Instantiated(handle, graph.added);
        }
    }

    /**
     * After {@code failure}: a graph with memory nodes reserves graph memory, so out of memory it
     * climbs the ladder (outside the graph's monitor) and is instantiated again, checks included.
     * Whatever it then throws drops the origin hold taken for it.
     */
    private static Instantiated instantiateAfterLadder(GraphState graph, OutOfMemoryLadder ladder,
            CudaException failure) {
        try {
            return ladder.retry(failure, AllocationKind.GRAPH_INSTANTIATE, 0, () -> instantiate(graph));
        } catch (RuntimeException | Error e) {
            graph.unhold();
            throw e;
        }
    }

    /**
     * Launches this executable on {@code s}, an open stream of its context: a replay of its graph.
     * Allocates nothing once warmed.
     */
    public void launch(StreamState s) {
        if (arena != null) {
            // A graph of a capture arena: after the replays of the arena's graphs queued on other streams.
            arena.orderReplay(s, replay);
            return;
        }
        // A relaunch of a graph with memory nodes first frees, in this stream's order, what the
        // last launch left allocated: it must follow the work other streams queued on that memory.
        MemorySegment relay = memory == null ? null : memory.relayBeforeRelaunch(s);
        try {
            queue(s, relay);
        } finally {
            if (relay != null) {
                context.events().release(relay); // the wait on it is queued (or nothing is)
            }
        }
    }

    /** Queues a launch on {@code s}, after a wait on {@code relay} when it is not null. */
    private void queue(StreamState s, MemorySegment relay) {
        synchronized (s.lock()) {
            s.checkOpen();
            usedOn(s);
            if (relay != null) {
                // An event of this context recorded on its synchronous stream after waits for
                // other streams; this stream is open and its lock is held.
                context.calls().streams().waitEvent(s.handle(), relay);
            }
            synchronized (lock) {
                if (AutomaticRanges.ON) {
                    AutomaticRanges.push(range);
                }
                try {
                    calls.launch(handle, s.handle());
                    LAUNCHES.setOpaque(this, (long) LAUNCHES.getOpaque(this) + 1); // the only writer: under lock
                    if (memory != null) {
                        memory.launched(); // its allocation nodes allocate from now on
                    }
                } finally {
                    // Its nodes write buffers they name by address: synchronous operations must
                    // order after it, even when it failed (it may have been queued).
                    s.submitted();
                    if (AutomaticRanges.ON) {
                        AutomaticRanges.pop();
                    }
                }
            }
        }
    }

    /** The launches the driver accepted so far (read without a lock; see the field). */
    public long launches() {
        return (long) LAUNCHES.getOpaque(this);
    }

    /** Uploads this executable to the device in {@code s}'s order, so that its first launch does not pay for it. */
    public void upload(StreamState s) {
        synchronized (s.lock()) {
            s.checkOpen();
            usedOn(s);
            synchronized (lock) {
                if (AutomaticRanges.ON) {
                    AutomaticRanges.push(AutomaticRanges.named("upload " + identity()));
                }
                try {
                    calls.upload(handle, s.handle());
                } finally {
                    if (AutomaticRanges.ON) {
                        AutomaticRanges.pop();
                    }
                }
            }
        }
    }

    @Override
    protected Retirement.Release howToFree() {
        return new Retirement.Release() {
            @Override
            public int free() {
                // Every stream it was launched on has passed a later fence: no launch of it remains.
                int r = context.calls().graphs().destroyExec(handle);
                if (r == 0) {
                    origin.executableDestroyed(); // a graph with memory nodes may have another now
                    dropHolds(); // only now: a graph must outlive the executables made from it
                }
                return r;
            }

            @Override
            public void abandoned() {
                // The handle is leaked, but closed and idle: nothing can launch or update it
                // again, so what it held (graphs, buffers, modules) is retired in turn.
                dropHolds();
            }
        };
    }

    /** Lets go of what the executable held; once, after its destroy or when retirement gives it up. */
    private void dropHolds() {
        holds.releaseAll();
        GraphState last;
        synchronized (lock) {
            last = current;
        }
        last.unhold();
        origin.unhold();
    }

    @Override
    protected boolean synchronizingFree() {
        return true; // it may free device memory the executable's nodes own
    }

    @Override
    public String identity() {
        return "GraphExec#" + id() + " (device " + context.device() + ")";
    }
}
