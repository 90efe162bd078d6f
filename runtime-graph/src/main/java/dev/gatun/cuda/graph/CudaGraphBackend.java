package dev.gatun.cuda.graph;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.CaptureGate;
import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.ContextCore;
import dev.gatun.cuda.internal.context.Internals;
import dev.gatun.cuda.internal.context.OwnedResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamCore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@link GraphBackend} on the real driver for one context. Beyond the driver calls it keeps what
 * captured work depends on: every owner a capture uses (module, buffer, ...) is held by the
 * captured graph, and by every executable made from it, until that graph or executable is
 * destroyed, and executables are destroyed only through the context's retirement queue once
 * their last launch completed. A global-mode capture holds the context's capture gate.
 */
final class CudaGraphBackend implements GraphBackend<Stream> {

    private static final int UPDATE_FAILURE = CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE();
    private static final String LAUNCH = "cuGraphLaunch";

    private final CudaContext context;
    private final ContextCore core;
    private final Internals.Bridge internals = Internals.get();
    /** Captures in progress, by stream. */
    private final Map<StreamCore, Capture> active = new ConcurrentHashMap<>();
    /** Buffers registered for the next capture on a stream (see {@link CudaGraphs#register}). */
    private final Map<StreamCore, Set<OwnedResource>> registrations = new ConcurrentHashMap<>();
    /** What each live graph holds. */
    private final Map<MemorySegment, Held> graphs = new ConcurrentHashMap<>();
    /**
     * Each live executable, by the identity of its handle segment (the lifecycle hands back the
     * segment instantiate returned). Copy-on-write: a replay's lookup takes no lock and
     * allocates nothing (MemorySegment.hashCode would); instantiate and destroy replace the map.
     */
    private volatile IdentityHashMap<MemorySegment, Exec> execs = new IdentityHashMap<>();

    /** Owners held on behalf of one graph or executable. */
    private static final class Held {
        final List<OwnedResource> owners = new ArrayList<>();

        synchronized void add(OwnedResource r) {
            r.hold();
            owners.add(r);
        }

        synchronized void addAll(Collection<OwnedResource> rs) {
            for (OwnedResource r : rs) {
                add(r);
            }
        }

        synchronized List<OwnedResource> snapshot() {
            return List.copyOf(owners);
        }

        synchronized void releaseAll() {
            for (OwnedResource r : owners) {
                r.unhold();
            }
            owners.clear();
        }
    }

    /** One capture: its scope (what the captured work uses) and, for global mode, its gate ticket. */
    private final class Capture implements CaptureScope {
        final Held held = new Held();
        final Set<OwnedResource> registered;
        final CaptureGate.CaptureTicket ticket;
        final Set<OwnedResource> seen = ConcurrentHashMap.newKeySet();

        Capture(Set<OwnedResource> registered, CaptureGate.CaptureTicket ticket) {
            this.registered = registered;
            this.ticket = ticket;
        }

        @Override
        public void admit(OwnedResource resource) {
            if (registered != null && resource.kind() == OwnerKind.DEVICE_BUFFER && !registered.contains(resource)) {
                throw new UnregisteredBufferException(resource.identity() + " is not registered with the capture in "
                        + "progress; its address would be baked into the graph unguarded. Register it "
                        + "(CudaGraphs.register) before beginning the capture");
            }
            if (seen.add(resource)) {
                held.add(resource);
            }
        }
    }

    /** An executable's retirement: fences on every stream it was launched on, then the segment's destroy. */
    private final class Exec extends OwnedResource {
        final MemorySegment handle;
        final Held held = new Held();
        volatile RetiredSegment retiring;

        Exec(MemorySegment handle) {
            super(core, OwnerKind.GRAPH_EXEC);
            this.handle = handle;
        }

        @Override
        protected Retirement.Release howToFree() {
            return () -> {
                try {
                    retiring.destroy();
                    return 0;
                } catch (dev.gatun.cuda.CudaException e) {
                    return e.result();
                }
            };
        }

        @Override
        protected boolean synchronizingFree() {
            return true;
        }

        @Override
        public String identity() {
            RetiredSegment r = retiring;
            return "GraphExec#" + id() + (r == null ? "" : " of " + r.identity());
        }
    }

    CudaGraphBackend(CudaContext context) {
        this.context = context;
        this.core = internals.context(context);
    }

    /** Registers buffers for the next capture that begins on {@code stream}. */
    void register(Stream stream, DeviceBuffer... buffers) {
        Set<OwnedResource> set = ConcurrentHashMap.newKeySet();
        for (DeviceBuffer b : buffers) {
            if (b.context() != context) {
                throw new dev.gatun.cuda.ContextMismatchException(b + " belongs to another device's context");
            }
            set.add(internals.buffer(b));
        }
        registrations.put(streamOf(stream), set);
    }

    private StreamCore streamOf(Stream stream) {
        if (stream.context() != context) {
            throw new dev.gatun.cuda.ContextMismatchException("only a stream of device " + context.device().ordinal()
                    + "'s context can be captured or replayed here; " + stream + " is device "
                    + stream.context().device().ordinal() + "'s");
        }
        StreamCore s = internals.stream(stream);
        if (s.closed()) {
            throw new IllegalStateException(stream + " is closed");
        }
        return s;
    }

    @Override
    public void beginCapture(Stream stream, CaptureMode mode) {
        StreamCore s = streamOf(stream);
        Set<OwnedResource> registered = registrations.remove(s);
        CaptureGate.CaptureTicket ticket = null;
        if (mode == CaptureMode.GLOBAL) {
            try {
                ticket = core.gate().enterCapture();
            } catch (CaptureGate.GateException e) {
                throw new CaptureActiveException("a global-mode capture on device " + context.device().ordinal()
                        + " could not begin: " + e.getMessage());
            }
        }
        boolean begun = false;
        try {
            core.enter("cuStreamBeginCapture");
            synchronized (s.captureLock()) {
                if (s.capturing()) {
                    throw new IllegalStateException(stream + " is already capturing; a stream captures one graph at a time");
                }
                // Work queued before the capture still runs while the stream captures, when no
                // fence can be recorded on it: synchronous reads wait on this one instead.
                s.fenceBeforeCapture();
                // Safety: an open stream of the current context, not capturing (checked under the
                // lock that fence recording also takes).
                core.check(core.api().cuStreamBeginCapture_v2(s.handle(), modeCode(mode)), "cuStreamBeginCapture");
                Capture capture = new Capture(registered, ticket);
                active.put(s, capture);
                s.setCaptureScope(capture);
                begun = true;
            }
        } finally {
            if (!begun && ticket != null) {
                core.gate().exitCapture(ticket);
            }
        }
    }

    private static int modeCode(CaptureMode mode) {
        return switch (mode) {
            case GLOBAL -> CudaDriver.CU_STREAM_CAPTURE_MODE_GLOBAL();
            case THREAD_LOCAL -> CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL();
            case RELAXED -> CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED();
        };
    }

    @Override
    public MemorySegment endCapture(Stream stream) {
        StreamCore s = internals.stream(stream);
        Capture capture = active.remove(s);
        if (capture == null) {
            throw new IllegalStateException(stream + " has no Gatun capture in progress");
        }
        MemorySegment graph = null;
        try {
            core.enter("cuStreamEndCapture");
            synchronized (s.captureLock()) {
                s.setCaptureScope(null);
                MemorySegment out = core.scratch();
                // Safety: ends the capture this backend began on this stream; scratch receives the CUgraph.
                int r = core.api().cuStreamEndCapture(s.handle(), out);
                if (r != 0) {
                    throw core.fail(r, "cuStreamEndCapture");
                }
                graph = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
            }
            graphs.put(graph, capture.held);
            return graph;
        } finally {
            if (capture.ticket != null) {
                core.gate().exitCapture(capture.ticket);
            }
            if (graph == null) {
                capture.held.releaseAll(); // an invalidated capture leaves no graph: nothing is held
            }
        }
    }

    @Override
    public MemorySegment instantiate(MemorySegment graph) {
        core.enter("cuGraphInstantiate");
        MemorySegment out = core.scratch();
        // Safety: graph is a live graph this backend captured; scratch receives the CUgraphExec.
        core.check(core.api().cuGraphInstantiateWithFlags(out, graph, 0), "cuGraphInstantiate");
        MemorySegment handle = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        Exec exec = new Exec(handle);
        Held ofGraph = graphs.get(graph);
        if (ofGraph != null) {
            exec.held.addAll(ofGraph.snapshot());
        }
        synchronized (this) {
            IdentityHashMap<MemorySegment, Exec> next = new IdentityHashMap<>(execs);
            next.put(handle, exec);
            execs = next;
        }
        return handle;
    }

    @Override
    public boolean tryUpdate(MemorySegment exec, MemorySegment graph) {
        core.enter("cuGraphExecUpdate");
        core.driver().require("cuGraphExecUpdate_v2", 12000);
        MemorySegment info = core.scratch();
        // Safety: both handles are live and of this context; scratch (64 bytes) holds the
        // CUgraphExecUpdateResultInfo the driver fills in (result, error node, error from node).
        int r = core.api().cuGraphExecUpdate_v2(exec, graph, info);
        if (r == UPDATE_FAILURE) {
            return false;
        }
        core.check(r, "cuGraphExecUpdate");
        Exec e = execs.get(exec);
        Held ofGraph = graphs.get(graph);
        if (e != null && ofGraph != null) {
            e.held.addAll(ofGraph.snapshot()); // it now runs the new graph's kernels and addresses
        }
        return true;
    }

    @Override
    public void upload(MemorySegment exec, Stream stream) {
        StreamCore s = streamOf(stream);
        core.enter("cuGraphUpload");
        Exec e = execs.get(exec);
        if (e != null) {
            e.usedOn(s);
        }
        // Safety: a live executable of this context on an open stream of it.
        core.check(core.api().cuGraphUpload(exec, s.handle()), "cuGraphUpload");
    }

    /** A replay: allocates nothing once warmed. */
    @Override
    public void launch(MemorySegment exec, Stream stream) {
        StreamCore s = internals.stream(stream);
        if (stream.context() != context || s.closed()) {
            streamOf(stream); // throws the matching typed error
        }
        core.enter(LAUNCH);
        Exec e = execs.get(exec);
        if (e != null) {
            e.usedOn(s);
        }
        // Safety: exec is live (the lifecycle never launches a retired one) and holds every owner
        // its nodes use; the stream is open and of this context.
        int r = core.api().cuGraphLaunch(exec, s.handle());
        s.submitted(); // its nodes write buffers they name by address: synchronous reads must order after it
        core.check(r, LAUNCH);
    }

    @Override
    public void destroyGraph(MemorySegment graph) {
        core.enter("cuGraphDestroy");
        // Safety: the lifecycle destroys each graph once, and the graph an executable was
        // instantiated from only after that executable (launches never use a graph itself).
        core.check(core.api().cuGraphDestroy(graph), "cuGraphDestroy");
        Held held = graphs.remove(graph);
        if (held != null) {
            held.releaseAll();
        }
    }

    @Override
    public void destroyExec(MemorySegment exec) {
        core.enter("cuGraphExecDestroy");
        // Safety: called only by retirement, after the fences of every stream this executable
        // was launched on completed.
        core.check(core.api().cuGraphExecDestroy(exec), "cuGraphExecDestroy");
        Exec e;
        synchronized (this) {
            IdentityHashMap<MemorySegment, Exec> next = new IdentityHashMap<>(execs);
            e = next.remove(exec);
            execs = next;
        }
        if (e != null) {
            e.held.releaseAll();
        }
    }

    /**
     * Points the {@code occurrence}-th node (0-based) of {@code segment}'s graph that launches
     * {@code function} at a new argument block, in the segment's executable, for later launches.
     * The executable then holds the buffers the new arguments name.
     *
     * <p>The node is looked up in the graph last captured, whose description (function,
     * dimensions, shared memory) is what the executable runs now. The driver, however, names the
     * executable's nodes by the nodes of the graph it was instantiated from (the segment's origin,
     * kept alive for this), and refuses any other node. After an in-place update the two graphs
     * are paired by position: cuGraphExecUpdate succeeded only because they have the same
     * topology with nodes created in the same order, and it pairs nodes in that order, the order
     * in which cuGraphGetNodes lists them (observed, not documented: {@link #originNode} checks
     * what it can of the pair).
     */
    void updateKernelNode(Segment segment, MemorySegment function, int occurrence, MemorySegment kernelParams,
            List<OwnedResource> argumentOwners, String kernelName) {
        core.enter("cuGraphExecKernelNodeSetParams");
        core.driver().require("cuGraphExecKernelNodeSetParams_v2", 12000);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nodes = nodesOf(segment.graph(), arena);
            MemorySegment type = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment params = CUDA_KERNEL_NODE_PARAMS_v2_st.allocate(arena);
            int seen = 0;
            for (long i = 0; i < nodes.byteSize() / ValueLayout.ADDRESS.byteSize(); i++) {
                MemorySegment node = nodes.getAtIndex(ValueLayout.ADDRESS, i);
                if (!isKernelNode(node, type)) {
                    continue;
                }
                // Safety: node is a kernel node of a live graph; params is sized for the struct the driver fills in.
                core.check(core.api().cuGraphKernelNodeGetParams_v2(node, params), "cuGraphKernelNodeGetParams");
                if (CUDA_KERNEL_NODE_PARAMS_v2_st.func(params).address() != function.address() || seen++ != occurrence) {
                    continue;
                }
                MemorySegment target = segment.updated() ? originNode(segment, nodes, i, type, arena) : node;
                CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(params, kernelParams);
                CUDA_KERNEL_NODE_PARAMS_v2_st.extra(params, MemorySegment.NULL);
                Exec e = execs.get(segment.exec());
                if (e != null) {
                    e.held.addAll(argumentOwners); // before the node can use them
                }
                // Safety: target is a kernel node of the graph the executable was instantiated
                // from, which lives as long as the executable; params is the description of the
                // node the executable runs now, with only its argument block replaced; the
                // driver copies the argument values during the call.
                core.check(core.api().cuGraphExecKernelNodeSetParams_v2(segment.exec(), target, params),
                        "cuGraphExecKernelNodeSetParams");
                return;
            }
            throw new IllegalArgumentException("the segment has " + seen + " node(s) launching kernel '" + kernelName
                    + "'; there is no occurrence " + occurrence);
        }
    }

    /** The node handles of {@code graph}, in the driver's order. */
    private MemorySegment nodesOf(MemorySegment graph, Arena arena) {
        MemorySegment count = arena.allocate(ValueLayout.JAVA_LONG);
        // Safety: graph is live (the slot's lock keeps it); a NULL array asks for the count only.
        core.check(core.api().cuGraphGetNodes(graph, MemorySegment.NULL, count), "cuGraphGetNodes");
        long n = count.get(ValueLayout.JAVA_LONG, 0);
        MemorySegment nodes = arena.allocate(ValueLayout.ADDRESS, Math.max(1, n));
        // Safety: nodes has room for the n handles the driver writes, and count says so.
        core.check(core.api().cuGraphGetNodes(graph, nodes, count), "cuGraphGetNodes");
        return nodes.asSlice(0, ValueLayout.ADDRESS.byteSize() * count.get(ValueLayout.JAVA_LONG, 0)); // as many as written
    }

    private boolean isKernelNode(MemorySegment node, MemorySegment type) {
        // Safety: node is a node of a live graph; type holds the enum the driver writes.
        core.check(core.api().cuGraphNodeGetType(node, type), "cuGraphNodeGetType");
        return type.get(ValueLayout.JAVA_INT, 0) == CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL();
    }

    /**
     * The node of the segment's origin graph paired with node {@code index} of its current graph
     * (see {@link #updateKernelNode}). Pairing by position rests on the driver listing the nodes
     * of both graphs in creation order, which it does not document; so the pair is checked as far
     * as the update allows: the same node count, and a kernel node at that position. Its function
     * is not compared: an in-place update may have changed it (a kernel of a replaced module),
     * and the driver lets a node update change it too.
     */
    private MemorySegment originNode(Segment segment, MemorySegment current, long index, MemorySegment type,
            Arena arena) {
        MemorySegment origin = nodesOf(segment.origin(), arena);
        if (origin.byteSize() != current.byteSize() || !isKernelNode(origin.getAtIndex(ValueLayout.ADDRESS, index), type)) {
            throw new IllegalStateException("node " + index + " of the graph this executable was updated to has no "
                    + "kernel node to pair with in the graph it was instantiated from, so no node was updated. Reset "
                    + "the slot and capture the segment anew for a fresh executable");
        }
        return origin.getAtIndex(ValueLayout.ADDRESS, index);
    }

    /** Retires a dropped segment: an executable waits for its launches; a bare graph goes at once. */
    void retire(RetiredSegment segment) {
        Exec e = segment.exec().address() == 0 ? null : execs.get(segment.exec());
        if (e == null) {
            segment.destroy();
            return;
        }
        e.retiring = segment;
        e.close();
    }

    /** How many executables are alive (for tests and counters). */
    int liveExecutables() {
        return execs.size();
    }

    /** How many graphs are alive. */
    int liveGraphs() {
        return graphs.size();
    }
}
