package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.driver.GraphBuildCalls;
import dev.gatun.cuda.internal.events.GraphInstantiateEvent;
import dev.gatun.cuda.internal.launch.KernelNodes;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A CUDA graph: a description of work, launched through the executables {@link #instantiate()}
 * makes from it. It is captured ({@link StreamCapture#end()}) or built node by node from an
 * empty one ({@link CudaContext#createGraph()}, then {@link #addKernel}, {@link #addMemset},
 * {@link #addFill}, {@link #addCopy}, {@link #addEventRecord}, {@link #addEventWait}, each after
 * the nodes it names as dependencies); a capture can be extended the same way. {@link #copy()} clones it, {@link #writeDot} prints it.
 *
 * <p>It holds every owner its recorded work uses (buffers whose addresses it baked in, modules
 * whose kernels it launches, events its nodes record or wait for) until it is destroyed, even if they are closed or their registry
 * name is replaced meanwhile. Closing it hands it to the context's retirement queue; an
 * executable made from it, or updated to run it, keeps it alive until that executable is
 * destroyed (the driver names an executable's nodes by those of the graph it was made from).
 */
public final class Graph extends Owner {

    private final CudaContext context;
    private final Resource resource;

    /** The graph handle, what it holds, and its retirement. */
    static final class Resource extends NativeResource {
        final MemorySegment handle;
        final Holds holds;
        /** Serializes adding nodes, cloning and instantiating, so each sees a whole graph. */
        final Object building = new Object();
        /** How many nodes were added by hand (guarded by {@link #building}): the next one's index. */
        int added;

        Resource(ContextState state, MemorySegment handle, Holds holds) {
            super(state, OwnerKind.GRAPH);
            this.handle = handle;
            this.holds = holds;
        }

        @Override
        protected Retirement.Release howToFree() {
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

    Graph(CudaContext context, MemorySegment handle, Holds holds) {
        Resource r = new Resource(context.state(), handle, holds);
        super(r);
        this.context = context;
        this.resource = r;
    }

    /** Retires a graph no one will use (what an aborted capture recorded). */
    static void discard(CudaContext context, MemorySegment handle) {
        new Resource(context.state(), handle, new Holds()).close();
    }

    public CudaContext context() {
        return context;
    }

    /**
     * A new executable of this graph ({@code cuGraphInstantiate}), holding everything this graph
     * holds, and this graph itself.
     *
     * @throws IllegalStateException when this graph is closed
     */
    public GraphExec instantiate() {
        GraphInstantiateEvent event = GraphInstantiateEvent.start();
        boolean instantiated = false;
        try {
            GraphExec exec = new GraphExec(context, resource);
            instantiated = true;
            return exec;
        } finally {
            if (event != null) {
                event.device = context.device().ordinal();
                event.instantiated = instantiated;
                event.commit();
            }
        }
    }

    /**
     * Adds a node that launches {@code launch}'s kernel with its configuration and its argument
     * values as they are now (the driver copies them; later {@code set*} calls on the launch do
     * not change the node). The graph then holds the kernel's module and the buffers the
     * arguments name.
     *
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @throws IllegalArgumentException for a cooperative launch or one with launch attributes
     *     (cluster, programmatic stream serialization, scheduling policy, priority: a kernel node
     *     carries grid, block and shared memory only: capture such a launch instead), a kernel of
     *     another context, or a dependency that is not a node of this graph
     * @throws IllegalStateException when this graph, the kernel or an argument buffer is closed
     */
    public GraphNode addKernel(KernelLaunch launch, GraphNode... dependencies) {
        resource.checkOpen();
        List<NativeResource> buffers = launch.checkedArgumentOwnersFor(context);
        Kernel kernel = launch.kernel();
        MemorySegment function = kernel.function();
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                MemorySegment params = KernelNodes.params(function, launch.config(), launch.params().kernelParams(),
                        arena);
                resource.holds.add(kernel.module()); // before the node can launch it
                resource.holds.addAll(buffers);
                // The launch checked its arguments against the kernel at prepare; the buffers
                // they name are open and now held by this graph.
                return added(calls().addKernel(resource.handle, deps, params), GraphNode.Kind.KERNEL);
            }
        }
    }

    /**
     * Adds a node that sets every byte of {@code destination} to {@code value}. The graph then
     * holds the view's buffer.
     *
     * @throws IllegalArgumentException for an empty view, a buffer of another context, or a
     *     dependency that is not a node of this graph
     * @throws IllegalStateException when this graph or the buffer is closed
     */
    public GraphNode addMemset(DeviceView destination, byte value, GraphNode... dependencies) {
        NativeResource buffer = checkTarget(destination, "the memset's destination");
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(buffer);
                return added(calls().addMemset(resource.handle, deps, destination.address(), value & 0xff, 1,
                        destination.byteLength(), arena), GraphNode.Kind.MEMSET);
            }
        }
    }

    /**
     * Adds a node that sets every 32-bit word of {@code destination} to {@code value} (e.g. a
     * float's raw bits). The view must start at a 4-byte aligned address and span whole words.
     *
     * @throws IllegalArgumentException as {@link #addMemset}, and for a misaligned view
     * @throws IllegalStateException when this graph or the buffer is closed
     */
    public GraphNode addFill(DeviceView destination, int value, GraphNode... dependencies) {
        NativeResource buffer = checkTarget(destination, "the fill's destination");
        destination.checkWords("fill");
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(buffer);
                return added(calls().addMemset(resource.handle, deps, destination.address(), value, 4,
                        destination.byteLength() / 4, arena), GraphNode.Kind.MEMSET);
            }
        }
    }

    /**
     * Adds a node that copies {@code source} to {@code destination}, device to device, both of
     * this graph's context and of the same byte length. The graph then holds both buffers.
     *
     * @throws IllegalArgumentException when the lengths differ, a view is empty or of another
     *     context, or a dependency is not a node of this graph
     * @throws IllegalStateException when this graph or a buffer is closed
     */
    public GraphNode addCopy(DeviceView destination, DeviceView source, GraphNode... dependencies) {
        long bytes = Ranges.sameLength(destination.byteLength(), source.byteLength());
        NativeResource to = checkTarget(destination, "the copy's destination");
        NativeResource from = checkTarget(source, "the copy's source");
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(to);
                resource.holds.add(from);
                return added(calls().addCopy(resource.handle, deps, destination.address(), source.address(), bytes,
                        arena), GraphNode.Kind.COPY);
            }
        }
    }

    /**
     * Adds a node that records {@code event} once the nodes it depends on are done
     * ({@code cuGraphAddEventRecordNode}), at every launch of an executable made from this graph:
     * another stream can then {@linkplain Stream#waitFor(Event) wait} for that part of the graph,
     * or the host {@linkplain Event#synchronize() for the event}. The graph then holds the event,
     * so closing it defers its destroy until the graph and its executables are gone.
     *
     * @throws IllegalArgumentException for an event of another context, or a dependency that is
     *     not a node of this graph
     * @throws IllegalStateException when this graph or the event is closed
     */
    public GraphNode addEventRecord(Event event, GraphNode... dependencies) {
        return addEventNode(event, dependencies, GraphNode.Kind.EVENT_RECORD);
    }

    /**
     * Adds a node that waits, before the nodes that depend on it, for the work captured by
     * {@code event}'s last record ({@code cuGraphAddEventWaitNode}), as {@link Stream#waitFor(Event)}
     * does: queue that record (on a stream of this context, or by launching a graph with a record
     * node) before launching an executable made from this graph. An event never recorded is
     * complete, and the node waits for nothing. The graph then holds the event.
     *
     * @throws IllegalArgumentException for an event of another context, or a dependency that is
     *     not a node of this graph
     * @throws IllegalStateException when this graph or the event is closed
     */
    public GraphNode addEventWait(Event event, GraphNode... dependencies) {
        return addEventNode(event, dependencies, GraphNode.Kind.EVENT_WAIT);
    }

    private GraphNode addEventNode(Event event, GraphNode[] dependencies, GraphNode.Kind kind) {
        resource.checkOpen();
        Objects.requireNonNull(event, "event");
        NativeResource owner = event.checkedOwnerFor(context, kind == GraphNode.Kind.EVENT_RECORD
                ? "the event to record" : "the event to wait for");
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(owner); // before the node can name it: no destroy while the graph lives
                MemorySegment node = kind == GraphNode.Kind.EVENT_RECORD
                        ? calls().addEventRecord(resource.handle, deps, event.handle())
                        : calls().addEventWait(resource.handle, deps, event.handle());
                return added(node, kind);
            }
        }
    }

    /**
     * A copy of this graph ({@code cuGraphClone}): the same nodes and dependencies, holding what
     * this graph holds. Nodes added to either later do not change the other; the copy's nodes
     * are its own, so the {@link GraphNode}s of this graph do not name them.
     *
     * @throws IllegalStateException when this graph is closed
     */
    public Graph copy() {
        resource.checkOpen();
        synchronized (resource.building) {
            MemorySegment clone = calls().cloneGraph(resource.handle);
            Holds holds = new Holds();
            holds.addAll(resource.holds); // its nodes bake in the same addresses and kernels
            return new Graph(context, clone, holds);
        }
    }

    /**
     * Writes this graph in Graphviz DOT ({@code cuGraphDebugDotPrint}, verbose: node types and
     * parameters) to {@code file}, replacing it; render it with {@code dot -Tsvg}.
     *
     * @throws IllegalArgumentException when {@code file} is not on the default file system or
     *     its directory does not exist
     * @throws CudaException when the driver cannot write it
     */
    public void writeDot(Path file) {
        resource.checkOpen();
        Objects.requireNonNull(file, "file");
        if (file.getFileSystem() != FileSystems.getDefault()) {
            throw new IllegalArgumentException("the driver writes the DOT file itself, so it must be on the default "
                    + "file system, not " + file.getFileSystem() + "; write it to a local path and copy it");
        }
        Path absolute = file.toAbsolutePath();
        Path directory = absolute.getParent();
        if (directory == null || !Files.isDirectory(directory)) {
            throw new IllegalArgumentException("the directory of " + absolute + " does not exist; create it first");
        }
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                calls().printDot(resource.handle, arena.allocateFrom(absolute.toString()));
            }
        }
    }

    /** Checks a node's view: open, of this graph's context, not empty; returns its buffer's owner. */
    private NativeResource checkTarget(DeviceView view, String what) {
        resource.checkOpen();
        DeviceBuffer buffer = view.buffer();
        context.checkSame(buffer.context(), what);
        buffer.address(); // throws when the buffer is closed
        if (view.byteLength() == 0) {
            throw new IllegalArgumentException(what + " is empty; add no node for it");
        }
        return buffer.resource();
    }

    /** The dependency array the driver takes, checked: nodes of this graph, each once. */
    private MemorySegment dependencies(GraphNode[] nodes, Arena arena) {
        Objects.requireNonNull(nodes, "dependencies; pass none instead of null");
        if (nodes.length == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment array = arena.allocate(ValueLayout.ADDRESS, nodes.length);
        for (int i = 0; i < nodes.length; i++) {
            GraphNode n = Objects.requireNonNull(nodes[i], "dependency " + i + " is null");
            if (n.graph() != this) {
                throw new IllegalArgumentException(n + " is not a node of " + this + "; name as dependencies only "
                        + "nodes this graph's add methods returned");
            }
            for (int j = 0; j < i; j++) {
                if (nodes[j] == n) {
                    throw new IllegalArgumentException(n + " is named twice as a dependency; name it once");
                }
            }
            array.setAtIndex(ValueLayout.ADDRESS, i, n.handle());
        }
        return array;
    }

    /** The node just added (called under the building lock). */
    private GraphNode added(MemorySegment handle, GraphNode.Kind kind) {
        return new GraphNode(this, handle, kind, resource.added++);
    }

    private GraphBuildCalls calls() {
        return context.state().calls().graphBuilding();
    }

    /** Creates an empty graph of {@code context} ({@link CudaContext#createGraph()}). */
    static Graph create(CudaContext context) {
        return new Graph(context, context.state().calls().graphBuilding().create(), new Holds());
    }

    Resource resource() {
        return resource;
    }
}
