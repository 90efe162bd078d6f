package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.HostCallback;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.driver.ConditionalCalls;
import dev.gatun.cuda.internal.driver.GraphBuildCalls;
import dev.gatun.cuda.internal.driver.GraphCalls;
import dev.gatun.cuda.internal.memory.PinnedMemory;
import dev.gatun.cuda.internal.events.GraphInstantiateEvent;
import dev.gatun.cuda.internal.launch.KernelNodes;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A CUDA graph: a description of work, launched through the executables {@link #instantiate()}
 * makes from it. It is captured ({@link StreamCapture#end()}) or built node by node from an
 * empty one ({@link CudaContext#createGraph()}, then {@link #addKernel}, {@link #addMemset},
 * {@link #addFill}, {@link #addCopy}, {@link #addUpload}, {@link #addDownload},
 * {@link #addEventRecord}, {@link #addEventWait}, {@link #addHost}, {@link #addChild}, each after
 * the nodes it names as dependencies); a capture can be extended the same way. {@link #nodes()}
 * lists its nodes, {@link #remove} removes one, {@link #copy()} clones it, {@link #writeDot} prints it.
 *
 * <p>Conditional nodes ({@link #addIf}, {@link #addIfElse}, {@link #addWhile}, {@link #addSwitch})
 * run body graphs according to a {@link ConditionalHandle} that kernels set on the device. Each
 * body is a view: a {@code Graph} built with the same add methods, owned by the graph that
 * holds its node (see {@link ConditionalNode}).
 *
 * <p>It holds every owner its recorded work uses (buffers whose addresses it baked in, modules
 * whose kernels it launches, events its nodes record or wait for, host callbacks its host nodes
 * run, what a child graph held when it was added) until it is destroyed, or, in a graph built by
 * hand, until no node of it names the owner any more ({@link #remove}), even if they are closed or their registry
 * name is replaced meanwhile. Closing it hands it to the context's retirement queue; an
 * executable made from it, or updated to run it, keeps it alive until that executable is
 * destroyed (the driver names an executable's nodes by those of the graph it was made from).
 *
 * <p>A captured graph may have memory nodes: {@link Stream#allocate} inside the capture records
 * an allocation node, and closing that buffer inside it a free node. The buffers still open when
 * the capture ended are the graph's {@link #allocations()}: each keeps its address on every
 * launch, holds memory from an executable's first launch on, and is freed by Gatun once closed
 * and once this graph and its executable are gone. The driver lets such a graph have one
 * executable at a time, and never clones it (nor a graph with conditional nodes); Gatun refuses
 * both before calling it.
 */
public final class Graph extends Owner {

    private final CudaContext context;
    /** The graph's resource; a body view shares the one of the graph that owns it. */
    private final Resource resource;
    /** The graph nodes are added to: the resource's, or a body's. */
    private final MemorySegment handle;
    /** The graph whose conditional node this body belongs to; null for a graph of its own. */
    private final Graph parent;
    /** What the resource knows of this body; null for a graph of its own. */
    private final Body body;
    /** The buffers allocated in its capture and not freed there, in allocation order. */
    private final List<DeviceBuffer> allocations;
    /** Its nodes Gatun made or listed, by handle, so each is one {@link GraphNode} (guarded by the resource's building lock). */
    private final Map<Long, GraphNode> known = new HashMap<>();

    /** The graph handle, what it holds, and its retirement. */
    static final class Resource extends NativeResource {
        final MemorySegment handle;
        final Holds holds;
        /** Serializes adding nodes, cloning and instantiating, so each sees a whole graph. */
        final Object building = new Object();
        /** How many nodes were added by hand (guarded by {@link #building}): the next one's index. */
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
        boolean handBuilt;
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
        volatile boolean destroyedByDriver;

        Resource(ContextState state, MemorySegment handle, Holds holds, GraphAllocations memory) {
            this(state, handle, holds, memory, null);
        }

        Resource(ContextState state, MemorySegment handle, Holds holds, GraphAllocations memory, ArenaSpace arena) {
            super(state, OwnerKind.GRAPH);
            this.handle = handle;
            this.holds = holds;
            this.memory = memory;
            this.arena = arena;
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

    /** What a graph's resource knows of one body of a conditional node inside it. */
    static final class Body {
        final String name;
        /** How many nodes were added to the body (guarded by the resource's building lock). */
        int nodes;

        /** How many of them were removed since (guarded by the resource's building lock). */
        int removed;

        /** Whether a stream capture records into it now (guarded by the resource's building lock). */
        boolean capturing;

        Body(String name) {
            this.name = name;
        }
    }

    Graph(CudaContext context, MemorySegment handle, Holds holds) {
        this(context, handle, holds, null, List.of(), null);
    }

    /** A captured graph; {@code memory} null when its capture made no allocation node, {@code arena} without an arena. */
    Graph(CudaContext context, MemorySegment handle, Holds holds, GraphAllocations memory,
            List<DeviceBuffer> allocations, ArenaSpace arena) {
        Resource r = new Resource(context.state(), handle, holds, memory, arena);
        super(r);
        this.context = context;
        this.resource = r;
        this.handle = handle;
        this.parent = null;
        this.body = null;
        this.allocations = List.copyOf(allocations);
    }

    /** A view of a body the driver created for a conditional node of {@code parent}. */
    private Graph(Graph parent, MemorySegment handle, Body body) {
        super(parent.resource, Tie.VIEWS);
        this.context = parent.context;
        this.resource = parent.resource;
        this.handle = handle;
        this.parent = parent;
        this.body = body;
        this.allocations = List.of();
    }

    /** Retires a graph no one will use (what an aborted capture recorded). */
    static void discard(CudaContext context, MemorySegment handle) {
        new Resource(context.state(), handle, new Holds(), null).close();
    }

    /**
     * {@return the buffers {@link Stream#allocate} made inside this graph's capture and that were still
     * open when it ended, in allocation order: each is an allocation node of this graph, at the
     * same address on every launch} Their memory exists from the first launch of an executable
     * of this graph on (each launch frees the previous launch's first, so replays repeat): read
     * them after a launch, in stream order or with a synchronous copy. Closing one lets Gatun free
     * it once this graph and its executable are gone. Empty for a graph built node by node, a body,
     * or a capture that allocated nothing. In a capture into a {@link CaptureArena} they are
     * ranges of the arena instead, with memory behind them at all times; another graph of the
     * arena overwrites them when it runs.
     */
    public List<DeviceBuffer> allocations() {
        return allocations;
    }

    /** {@return whether this graph has memory allocation or free nodes (its capture allocated on its stream)} */
    public boolean hasMemoryNodes() {
        return resource.memory != null;
    }

    /** {@return the context this graph belongs to} */
    public CudaContext context() {
        return context;
    }

    /**
     * {@return a new executable of this graph ({@code cuGraphInstantiate}), holding everything this graph
     * holds, and this graph itself}
     *
     * <p>An executable of a graph with {@linkplain #hasMemoryNodes() memory nodes} is made with
     * {@code CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH}: each launch frees what the previous
     * one left allocated before allocating again, so it can be launched repeatedly.
     *
     * @throws IllegalStateException when this graph is closed or is a conditional node's body
     *     (instantiate the graph that holds the node), when a body of a conditional node in it
     *     has no nodes, or a conditional handle created in it is used by no node; when it has
     *     memory nodes and an executable of it still exists (the driver allows one at a time)
     */
    public GraphExec instantiate() {
        checkNotBody("instantiate");
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
     * @param launch a prepared launch of a kernel of this graph's context
     * @return the new node
     * @throws IllegalArgumentException for a cooperative launch or one with launch attributes
     *     (cluster, programmatic stream serialization, scheduling policy, priority: a kernel node
     *     carries grid, block and shared memory only: capture such a launch instead), a kernel of
     *     another context, or a dependency that is not a node of this graph
     * @throws IllegalStateException when this graph, the kernel or an argument buffer is closed
     */
    public GraphNode addKernel(KernelLaunch launch, GraphNode... dependencies) {
        checkOpen();
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
                List<NativeResource> names = new ArrayList<>(buffers);
                names.add(kernel.module());
                // The launch checked its arguments against the kernel at prepare; the buffers
                // they name are open and now held by this graph.
                return added(calls().addKernel(handle, deps, params), GraphNode.Kind.KERNEL, names);
            }
        }
    }

    /**
     * Adds a node that sets every byte of {@code destination} to {@code value}. The graph then
     * holds the view's buffer.
     *
     * @param destination the bytes to set
     * @param value the byte every byte is set to
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
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
                return added(calls().addMemset(handle, deps, destination.address(), value & 0xff, 1,
                        destination.byteSize(), arena), GraphNode.Kind.MEMSET, List.of(buffer));
            }
        }
    }

    /**
     * Adds a node that sets every 32-bit word of {@code destination} to {@code value} (e.g. a
     * float's raw bits). The view must start at a 4-byte aligned address and span whole words.
     *
     * @param destination the words to set
     * @param value the 32-bit pattern every word is set to
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
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
                return added(calls().addMemset(handle, deps, destination.address(), value, 4,
                        destination.byteSize() / 4, arena), GraphNode.Kind.MEMSET, List.of(buffer));
            }
        }
    }

    /**
     * Adds a node that copies {@code source} to {@code destination}, device to device, both of
     * this graph's context and of the same byte length. The graph then holds both buffers.
     *
     * @param destination where the bytes go
     * @param source where they come from
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException when the lengths differ, a view is empty or of another
     *     context, or a dependency is not a node of this graph
     * @throws IllegalStateException when this graph or a buffer is closed
     */
    public GraphNode addCopy(DeviceView destination, DeviceView source, GraphNode... dependencies) {
        long bytes = Ranges.sameLength(destination.byteSize(), source.byteSize());
        NativeResource to = checkTarget(destination, "the copy's destination");
        NativeResource from = checkTarget(source, "the copy's source");
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(to);
                resource.holds.add(from);
                return added(calls().addCopy(handle, deps, destination.address(), false, source.address(), false,
                        bytes, arena), GraphNode.Kind.COPY, List.of(to, from));
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
     * @param event an event of this graph's context
     * @param dependencies nodes of this graph that must complete before the record (none: it may record at once)
     * @return the new node
     * @throws IllegalArgumentException for an event of another context, or a dependency that is
     *     not a node of this graph
     * @throws IllegalStateException when this graph or the event is closed, or this graph is a
     *     conditional node's body
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
     * @param event an event of this graph's context
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException for an event of another context, or a dependency that is
     *     not a node of this graph
     * @throws IllegalStateException when this graph or the event is closed, or this graph is a
     *     conditional node's body
     */
    public GraphNode addEventWait(Event event, GraphNode... dependencies) {
        return addEventNode(event, dependencies, GraphNode.Kind.EVENT_WAIT);
    }

    private GraphNode addEventNode(Event event, GraphNode[] dependencies, GraphNode.Kind kind) {
        checkOpen();
        if (body != null) {
            throw new IllegalStateException(this + " is a conditional node's body, which the driver lets hold only "
                    + "kernel, memset, copy and conditional nodes; add the event node to the graph that holds it");
        }
        Objects.requireNonNull(event, "event");
        NativeResource owner = event.checkedOwnerFor(context, kind == GraphNode.Kind.EVENT_RECORD
                ? "the event to record" : "the event to wait for");
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(owner); // before the node can name it: no destroy while the graph lives
                MemorySegment node = kind == GraphNode.Kind.EVENT_RECORD
                        ? calls().addEventRecord(handle, deps, event.handle())
                        : calls().addEventWait(handle, deps, event.handle());
                return added(node, kind, List.of(owner));
            }
        }
    }

    /**
     * Adds a node that runs {@code ops} in order ({@code cuGraphAddBatchMemOpNode}): writes of
     * words, and waits until words meet a condition, at every launch of an executable made from
     * this graph. The graph then holds every buffer and mapped word the operations name. A wait
     * that never completes stalls the launch's stream (see {@link StreamMemOps}).
     *
     * @param ops 1 to {@value MemOp#MAX_BATCH} operations on words of this graph's context
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException for an empty or too long batch, a word of another context,
     *     an operation the device does not support, or a dependency not of this graph
     * @throws IllegalStateException when this graph, a buffer or a mapped word is closed, or this
     *     graph is a conditional node's body (the driver lets a body hold no such node)
     */
    public GraphNode addBatchMemOps(List<MemOp> ops, GraphNode... dependencies) {
        checkOpen();
        if (body != null) {
            throw new IllegalStateException(this + " is a conditional node's body, which the driver lets hold only "
                    + "kernel, memset, copy and conditional nodes; add the memory operations to the graph that holds it");
        }
        List<MemOp> checked = MemOp.checkBatch(ops, context);
        List<NativeResource> targets = new ArrayList<>(checked.size());
        for (MemOp op : checked) {
            targets.add(op.targetOf(context));
        }
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                targets.forEach(resource.holds::add); // before the node names them: no free while the graph lives
                MemorySegment params = MemOp.encode(checked, arena);
                return added(context.state().calls().memOps().addBatchNode(handle, deps, checked.size(), params,
                        arena), GraphNode.Kind.BATCH_MEM_OP, targets);
            }
        }
    }

    /**
     * {@return a new conditional handle of this graph ({@code cuGraphConditionalHandleCreate}) that every
     * launch of an executable sets to {@code defaultValue} before any node runs
     * ({@code CU_GRAPH_COND_ASSIGN_DEFAULT}); kernels change it from there} The conditional
     * nodes of this graph, and of bodies inside it, may use it; one must before instantiation.
     *
     * @param defaultValue read as unsigned, as the device reads it
     * @throws DriverTooOldException on a driver older than CUDA 12.3, before any driver call
     * @throws IllegalStateException when this graph is closed
     */
    public ConditionalHandle createConditionalHandle(int defaultValue) {
        return createHandle(defaultValue, true);
    }

    /**
     * {@return a new conditional handle of this graph whose value no launch resets: it keeps what a kernel
     * set last, also from one launch to the next, and is undefined until a kernel sets it} Set
     * it in a node that every conditional node using it depends on. Otherwise as
     * {@link #createConditionalHandle(int)}.
     */
    public ConditionalHandle createConditionalHandleSetByKernels() {
        return createHandle(0, false);
    }

    private ConditionalHandle createHandle(int defaultValue, boolean assignEachLaunch) {
        checkOpen();
        synchronized (resource.building) {
            long value = conditionals().createHandle(handle, defaultValue, assignEachLaunch);
            ConditionalHandle created = new ConditionalHandle(this, value, defaultValue, assignEachLaunch);
            resource.unusedHandles.put(value, created.toString());
            return created;
        }
    }

    /**
     * Adds an IF node: its {@linkplain ConditionalNode#body() body} runs once when
     * {@code handle}'s value is not 0 as the node starts, and not at all otherwise.
     *
     * @param handle a handle of this graph or of a graph this body is inside
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node, with its body to build
     * @throws DriverTooOldException on a driver older than CUDA 12.3, before any driver call
     * @throws IllegalArgumentException for a handle of another graph, or a dependency that is
     *     not a node of this graph
     * @throws IllegalStateException when this graph is closed
     */
    public ConditionalNode addIf(ConditionalHandle handle, GraphNode... dependencies) {
        return addConditional(handle, ConditionalNode.Type.IF, 1, dependencies);
    }

    /**
     * Adds an IF node with an ELSE body: {@code bodies().get(0)} runs when {@code handle}'s value
     * is not 0, {@code bodies().get(1)} when it is 0. Otherwise as {@link #addIf}.
     *
     * @param handle a handle of this graph or of a graph this body is inside
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node, with its two bodies to build
     * @throws DriverTooOldException on a driver older than CUDA 12.8, before any driver call
     */
    public ConditionalNode addIfElse(ConditionalHandle handle, GraphNode... dependencies) {
        return addConditional(handle, ConditionalNode.Type.IF, 2, dependencies);
    }

    /**
     * Adds a WHILE node: when {@code handle}'s value is not 0 as the node starts, its
     * {@linkplain ConditionalNode#body() body} runs, and runs again as long as the value is not
     * 0 after a run. A kernel of the body must set it to 0 at some point: the loop has no other
     * end. Otherwise as {@link #addIf}.
     *
     * @param handle a handle of this graph or of a graph this body is inside
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node, with its body to build
     */
    public ConditionalNode addWhile(ConditionalHandle handle, GraphNode... dependencies) {
        return addConditional(handle, ConditionalNode.Type.WHILE, 1, dependencies);
    }

    /**
     * Adds a SWITCH node with {@code cases} bodies: body number {@code value} runs when
     * {@code handle}'s value is below {@code cases}, none otherwise. Otherwise as {@link #addIf}.
     *
     * @param handle a handle of this graph or of a graph this body is inside
     * @param cases how many bodies the node has, at least 1
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node, with its {@code cases} bodies to build
     * @throws IllegalArgumentException also when {@code cases} is less than 1
     * @throws DriverTooOldException on a driver older than CUDA 12.8, before any driver call
     */
    public ConditionalNode addSwitch(ConditionalHandle handle, int cases, GraphNode... dependencies) {
        if (cases < 1) {
            throw new IllegalArgumentException("a SWITCH node needs at least one case, not " + cases);
        }
        return addConditional(handle, ConditionalNode.Type.SWITCH, cases, dependencies);
    }

    private ConditionalNode addConditional(ConditionalHandle handle, ConditionalNode.Type type, int bodies,
            GraphNode... dependencies) {
        int driverType = checkConditional(handle, type, bodies);
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                return conditionalAdded(conditionals().addConditional(this.handle, deps, handle.value(), driverType,
                        bodies, arena), type, handle, bodies);
            }
        }
    }

    /** Checks a conditional node's graph, handle and driver before any call; returns its {@code CU_GRAPH_COND_TYPE_*}. */
    private int checkConditional(ConditionalHandle handle, ConditionalNode.Type type, int bodies) {
        checkOpen();
        checkHandle(handle);
        int driverType = switch (type) {
            case IF -> ConditionalCalls.IF;
            case WHILE -> ConditionalCalls.WHILE;
            case SWITCH -> ConditionalCalls.SWITCH;
        };
        conditionals().requireNode(driverType, bodies);
        return driverType;
    }

    /** The conditional node the driver just added, with views of its bodies (under the building lock). */
    private ConditionalNode conditionalAdded(ConditionalCalls.AddedConditional made, ConditionalNode.Type type,
            ConditionalHandle handle, int bodies) {
        resource.unusedHandles.remove(handle.value());
        GraphNode added = added(made.node(), GraphNode.Kind.CONDITIONAL, List.of());
        List<Graph> views = new ArrayList<>(bodies);
        for (int i = 0; i < bodies; i++) {
            Body b = new Body(bodyName(type, bodies, i) + " of " + added);
            resource.bodies.add(b);
            views.add(new Graph(this, made.bodies().get(i), b));
        }
        return new ConditionalNode(added, type, handle, views);
    }

    /**
     * Adds a conditional node to this graph, which the capture on {@code stream} records into,
     * after the capture's current dependencies ({@code info}, read just before under the
     * stream's lock, which the caller still holds), and makes it the capture's only dependency,
     * so the work captured next runs after it ({@link StreamCapture#addIf} and the others).
     */
    ConditionalNode addConditionalToCapture(ConditionalHandle handle, ConditionalNode.Type type, int bodies,
            ConditionalCalls.CaptureInfo info, MemorySegment stream) {
        int driverType = checkConditional(handle, type, bodies);
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                ConditionalNode node = conditionalAdded(conditionals().addConditional(this.handle, info.dependencies(),
                        info.edgeData(), info.count(), handle.value(), driverType, bodies, arena), type, handle, bodies);
                try {
                    conditionals().setCaptureDependency(stream, node.node().handle());
                } catch (RuntimeException e) {
                    // The node is in the graph, but work captured from now on would not wait for it.
                    resource.unusable = node + " was added to the capture, but could not be made the capture's "
                            + "dependency (" + e.getMessage() + "), so the work captured after it does not wait for it: "
                            + "abort the capture and capture again";
                    throw e;
                }
                return node;
            }
        }
    }

    private static String bodyName(ConditionalNode.Type type, int bodies, int i) {
        return switch (type) {
            case IF -> i == 0 ? "the IF body" : "the ELSE body";
            case WHILE -> "the WHILE body";
            case SWITCH -> "case " + i + " of " + bodies;
        };
    }

    /** Checks that a node of this graph may use {@code handle}: one of this graph or of a graph it is a body of. */
    private void checkHandle(ConditionalHandle handle) {
        Objects.requireNonNull(handle, "handle");
        for (Graph g = this; g != null; g = g.parent) {
            if (g == handle.graph()) {
                return;
            }
        }
        throw new IllegalArgumentException(handle + " is not of " + this + " nor of a graph it is a body of; create "
                + "the handle with createConditionalHandle on this graph");
    }

    /**
     * Adds a node that copies {@code destination.byteSize()} bytes from {@code source}, a pinned
     * host buffer of this graph's context, from {@code sourceOffset} on, to {@code destination} on
     * the device, at every launch. The graph then holds both buffers.
     *
     * <p>Every executable made from this graph holds the pinned buffer, and the buffer's host
     * access ({@link PinnedBuffer#segment()}, {@link PinnedBuffer#awaitTransfer()}) waits for the
     * launches of those executables queued before it: write its host bytes before a launch is
     * queued, and ask for the segment again before changing them for the next one.
     *
     * @param destination where the bytes go
     * @param source the pinned buffer they come from
     * @param sourceOffset where in {@code source} they start
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException for an empty view, a buffer of another context, or a
     *     dependency that is not a node of this graph
     * @throws IndexOutOfBoundsException when the range lies outside {@code source}
     * @throws IllegalStateException when this graph or a buffer is closed
     */
    public GraphNode addUpload(DeviceView destination, PinnedBuffer source, long sourceOffset,
            GraphNode... dependencies) {
        NativeResource device = checkTarget(destination, "the upload's destination");
        long host = checkedHost(source, sourceOffset, destination.byteSize(), "upload source");
        return addHostCopy(device, destination.address(), source.memory(), host, true, destination.byteSize(),
                dependencies);
    }

    /**
     * Adds a node that copies {@code source} on the device to {@code destination}, a pinned host
     * buffer of this graph's context, from {@code destinationOffset} on, at every launch. The graph
     * then holds both buffers. The buffer's host access waits for the launches queued before it
     * of every executable made from this graph (as for {@link #addUpload}), so the segment read
     * after a launch holds what the launch copied.
     *
     * @param destination the pinned buffer the bytes go to
     * @param destinationOffset where in {@code destination} they go
     * @param source where they come from
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException as {@link #addUpload}
     * @throws IndexOutOfBoundsException when the range lies outside {@code destination}
     * @throws IllegalStateException when this graph or a buffer is closed
     */
    public GraphNode addDownload(PinnedBuffer destination, long destinationOffset, DeviceView source,
            GraphNode... dependencies) {
        NativeResource device = checkTarget(source, "the download's source");
        long host = checkedHost(destination, destinationOffset, source.byteSize(), "download destination");
        return addHostCopy(device, source.address(), destination.memory(), host, false, source.byteSize(),
                dependencies);
    }

    /** Adds a copy node between checked device and pinned ranges; the graph then holds both buffers. */
    private GraphNode addHostCopy(NativeResource device, long deviceAddress, PinnedMemory pinned, long hostAddress,
            boolean toDevice, long bytes, GraphNode[] dependencies) {
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                resource.holds.add(device);
                resource.holds.add(pinned);
                MemorySegment node = toDevice
                        ? calls().addCopy(handle, deps, deviceAddress, false, hostAddress, true, bytes, arena)
                        : calls().addCopy(handle, deps, hostAddress, true, deviceAddress, false, bytes, arena);
                return added(node, GraphNode.Kind.COPY, List.of(device, pinned));
            }
        }
    }

    /** Checks a pinned buffer's range for a copy node; returns the host address it starts at. */
    private long checkedHost(PinnedBuffer buffer, long offset, long bytes, String role) {
        Objects.requireNonNull(buffer, role);
        context.checkSame(buffer.context(), "the " + role);
        PinnedMemory memory = buffer.memory();
        memory.checkOpen();
        Ranges.checkRange(offset, bytes, memory.size(), role, memory);
        return memory.view().address() + offset;
    }

    /**
     * Adds a host node: at every launch, once its dependencies are done, the driver's own thread
     * runs {@code callback}, and the nodes after it wait until it returns
     * ({@code cuGraphAddHostNode}). The graph then holds the callback, until it and every
     * executable made from it are gone.
     *
     * <p><b>No CUDA inside.</b> CUDA forbids CUDA calls in host functions (one that waits for the
     * GPU would wait for the callback that waits for it), so every Gatun call that would reach the
     * driver from inside the callback is refused before it is made, with a {@link CudaException}
     * of {@code CUDA_ERROR_NOT_PERMITTED} that says why. Do host-side work only: read or write
     * pinned memory that copy nodes around it move, count, signal a Java thread.
     *
     * <p><b>What it throws</b> cannot reach the code that launched the graph: it is logged (SLF4J,
     * ERROR), counted ({@link ContextDiagnostics#hostCallbackFailureCount()}) and kept for
     * {@link ContextDiagnostics#takeHostCallbackFailures()}; the nodes after it run as usual.
     *
     * @param callback what the node runs; it should return soon, since the driver's thread runs
     *     every host function of the process in turn
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException for a dependency that is not a node of this graph
     * @throws IllegalStateException when this graph is closed, or is a conditional node's body
     */
    public GraphNode addHost(Runnable callback, GraphNode... dependencies) {
        checkOpen();
        checkNotInBody("a host node");
        HostCallback held = new HostCallback(context.state(), callback);
        try {
            synchronized (resource.building) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment deps = dependencies(dependencies, arena);
                    resource.holds.add(held); // before the node can run it
                    return added(calls().addHost(handle, deps, held.token(), arena), GraphNode.Kind.HOST,
                            List.of(held));
                }
            }
        } finally {
            held.close(); // the graph's hold keeps it registered; without one (a refusal) it goes now
        }
    }

    /**
     * Adds a node that runs {@code child} as one step ({@code cuGraphAddChildGraphNode}). The
     * driver copies the child into the node: nodes added to {@code child} later, or closing it,
     * do not change this graph. This graph then holds everything {@code child} holds now (its
     * buffers, modules, events and host callbacks), since the copy names them too.
     *
     * @param child a graph of this context without memory nodes or conditional nodes
     * @param dependencies nodes of this graph that must complete first (none: it may start at once)
     * @return the new node
     * @throws IllegalArgumentException when {@code child} is of another context, is this graph or
     *     one of its bodies, is a conditional node's body, has memory nodes (the driver refuses
     *     them in a child) or conditional nodes (Gatun does not add those as children: build them
     *     into this graph instead), a stream capture still records into it, or a dependency is not
     *     a node of this graph
     * @throws IllegalStateException when this graph or {@code child} is closed, or this graph is a
     *     conditional node's body
     */
    public GraphNode addChild(Graph child, GraphNode... dependencies) {
        checkOpen();
        checkNotInBody("a child graph node");
        Objects.requireNonNull(child, "child");
        context.checkSame(child.context(), "the child graph");
        child.checkOpen();
        if (child.resource == resource) {
            throw new IllegalArgumentException(child + " is this graph or one of its bodies; a graph cannot contain "
                    + "itself: add a copy() of it instead");
        }
        if (child.body != null) {
            throw new IllegalArgumentException(child + " is a conditional node's body; add the graph that holds it");
        }
        if (child.resource.memory != null) {
            throw new IllegalArgumentException(child + " has memory allocation or free nodes, which the driver does "
                    + "not allow in a child graph; capture the work into this graph instead");
        }
        // Both graphs' building locks, in the order of their ids: the child cannot change while
        // it is copied, and two threads adding each other's graphs cannot deadlock.
        Resource first = resource.id() < child.resource.id() ? resource : child.resource;
        Resource second = first == resource ? child.resource : resource;
        synchronized (first.building) {
            synchronized (second.building) {
                if (child.resource.capturesOpen > 0) {
                    throw new IllegalArgumentException("a stream capture still records into " + child + " or a body "
                            + "in it; end that capture first");
                }
                if (!child.resource.bodies.isEmpty()) {
                    throw new IllegalArgumentException(child + " has conditional nodes; Gatun does not add such a "
                            + "graph as a child (its handles belong to it): add the conditional nodes to this graph");
                }
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment deps = dependencies(dependencies, arena);
                    List<NativeResource> names = child.resource.holds.snapshot();
                    resource.holds.addAll(names); // before the copy names them
                    return added(calls().addChild(handle, deps, child.resource.handle), GraphNode.Kind.CHILD_GRAPH,
                            names);
                }
            }
        }
    }

    /**
     * Removes {@code node} and every dependency from or to it ({@code cuGraphDestroyNode}); the
     * nodes that depended on it no longer wait for its dependencies either. Executables made
     * before keep running it (they hold what they baked in), but can no longer address it
     * ({@link GraphExec#setEnabled} and the other node updates refuse it).
     *
     * <p><b>Retention.</b> In a graph built from {@link CudaContext#createGraph()}, this graph lets
     * go of each owner the node named (a buffer, module, event, host callback, or what a child
     * graph held) that no other node of it names any more, so closing it frees it once the
     * executables that still hold it are gone. A captured graph, a {@link #copy()} and what they
     * were extended with keep holding everything until they are destroyed, since the driver does
     * not say which captured node names what.
     *
     * @param node a node of this graph, not removed yet
     * @throws IllegalArgumentException when {@code node} is of another graph, or is a conditional
     *     node (Gatun does not remove those, whose bodies it tracks: build the graph again without it)
     * @throws IllegalStateException when this graph is closed, or {@code node} was removed already
     * @throws CudaException when the driver fails; the node may be gone or not, so Gatun counts it
     *     removed (it is never named to the driver again) and keeps holding what it named
     */
    public void remove(GraphNode node) {
        checkOpen();
        Objects.requireNonNull(node, "node");
        if (node.graph() != this) {
            throw new IllegalArgumentException(node + " is not a node of " + this + "; remove it from its own graph");
        }
        if (node.kind() == GraphNode.Kind.CONDITIONAL) {
            throw new IllegalArgumentException(node + " is a conditional node; Gatun does not remove those (their "
                    + "bodies and handles are checked at instantiation): build the graph again without it");
        }
        List<NativeResource> release = new ArrayList<>();
        synchronized (resource.building) {
            if (node.isRemoved()) {
                throw new IllegalStateException(node + " was removed already");
            }
            try {
                calls().destroyNode(node.handle());
            } finally {
                // A failed destroy may have taken effect: the node is never named to the driver
                // again, and what it named stays held (below runs only on success).
                node.markRemoved();
                known.remove(node.handle().address());
            }
            if (body != null) {
                body.removed++;
            }
            List<NativeResource> names = resource.namedByNode.remove(node.handle().address());
            if (names != null && resource.handBuilt) {
                for (NativeResource r : names) {
                    if (!release.contains(r) && !namedByAnotherNode(r)) {
                        release.add(r);
                    }
                }
            }
        }
        // Outside the building lock: a last hold let go retires its owner, which may record fences.
        for (NativeResource r : release) {
            resource.holds.remove(r);
        }
    }

    private boolean namedByAnotherNode(NativeResource owner) {
        for (List<NativeResource> names : resource.namedByNode.values()) {
            if (names.contains(owner)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Adds a programmatic dependency of kernel node {@code consumer} on kernel node
     * {@code producer} ({@code cuGraphAddDependencies_v2}, {@code CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC}
     * from the producer's {@code CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC}): the consumer may start
     * once every block of the producer has triggered ({@code griddepcontrol.launch_dependents},
     * {@code cudaTriggerProgrammaticLaunchCompletion()}) or exited, so the pair overlaps as a
     * captured programmatic dependent launch does. The consumer must call
     * {@code griddepcontrol.wait} ({@code cudaGridDependencySynchronize()}) before it reads what the
     * producer wrote: that wait returns once the producer has completed and its writes are visible.
     * Name the consumer without the producer as a dependency (an existing edge between them makes
     * the driver refuse this one). The edge names no owner: the graph's holds do not change.
     *
     * @param producer a kernel node of this graph
     * @param consumer another kernel node of this graph
     * @throws DriverTooOldException on a driver older than CUDA 12.3, before any driver call
     * @throws IllegalArgumentException when either is not a kernel node of this graph, or was
     *     removed, when they are the same node, or the device is older than compute capability 9.0
     * @throws IllegalStateException when this graph is closed
     * @throws CudaException when the driver refuses the edge (an edge between them exists)
     */
    public void addProgrammaticDependency(GraphNode producer, GraphNode consumer) {
        addProgrammatic(producer, consumer, false);
    }

    /**
     * Adds a programmatic dependency that lets kernel node {@code consumer} start once every block
     * of kernel node {@code producer} has begun ({@code CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER}), as
     * a launch completion event does. It orders the launches only: the consumer must not read what
     * the producer writes. Otherwise as {@link #addProgrammaticDependency}.
     *
     * @param producer a kernel node of this graph
     * @param consumer another kernel node of this graph
     */
    public void addLaunchOrderDependency(GraphNode producer, GraphNode consumer) {
        addProgrammatic(producer, consumer, true);
    }

    private void addProgrammatic(GraphNode producer, GraphNode consumer, boolean launchOrder) {
        checkOpen();
        checkKernelNode(producer, "producer");
        checkKernelNode(consumer, "consumer");
        if (producer == consumer) {
            throw new IllegalArgumentException(producer + " cannot depend on itself; name two kernel nodes");
        }
        DeviceCapabilities caps = context.device().capabilities();
        if (caps.computeMajor() < 9) {
            throw new IllegalArgumentException("programmatic dependencies need compute capability 9.0 or newer, this "
                    + "device has " + caps.computeCapability() + "; name the producer as an ordinary dependency instead");
        }
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                calls().addProgrammaticEdge(handle, producer.handle(), consumer.handle(), launchOrder, arena);
            }
        }
    }

    private void checkKernelNode(GraphNode node, String role) {
        Objects.requireNonNull(node, role);
        if (node.graph() != this || node.isRemoved()) {
            throw new IllegalArgumentException("the " + role + ", " + node + ", is not a node of " + this
                    + (node.isRemoved() ? " any more" : "") + "; name kernel nodes this graph has");
        }
        if (node.kind() != GraphNode.Kind.KERNEL) {
            throw new IllegalArgumentException("the " + role + ", " + node + ", is not a kernel node; programmatic "
                    + "dependencies join kernel nodes only");
        }
    }

    /**
     * {@return every node of this graph ({@code cuGraphGetNodes}), in the driver's order, each with its
     * kind ({@code cuGraphNodeGetType})} A node an add method returned is listed as that same
     * {@link GraphNode}; a node Gatun did not add (a captured graph's) gets one the first time it
     * is listed, with index -1, and the same one afterwards. Listed nodes can be named as
     * dependencies and removed. The nodes inside conditional nodes' bodies and child graphs are
     * not listed: list a body's with its own {@code nodes()}.
     *
     * @throws IllegalStateException when this graph is closed
     */
    public List<GraphNode> nodes() {
        checkOpen();
        GraphCalls graphs = context.state().calls().graphs();
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment handles = graphs.nodes(handle, arena);
                int n = (int) (handles.byteSize() / ValueLayout.ADDRESS.byteSize());
                List<GraphNode> listed = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    MemorySegment h = handles.getAtIndex(ValueLayout.ADDRESS, i);
                    GraphNode node = known.get(h.address());
                    if (node == null) {
                        node = new GraphNode(this, h, kindOf(graphs.nodeType(h)), -1);
                        known.put(h.address(), node);
                    }
                    listed.add(node);
                }
                return List.copyOf(listed);
            }
        }
    }

    /** The kind of a {@code CU_GRAPH_NODE_TYPE_*} the driver reported. */
    private static GraphNode.Kind kindOf(int type) {
        GraphNode.Kind kind = GraphNode.kindOfDriverType(type);
        if (kind == null) {
            throw new IllegalStateException("the driver reports node type " + type + ", which this version of Gatun "
                    + "does not know; update Gatun");
        }
        return kind;
    }

    private void checkNotInBody(String what) {
        if (body != null) {
            throw new IllegalStateException(this + " is a conditional node's body, which Gatun lets hold only kernel, "
                    + "memset, copy and conditional nodes; add " + what + " to the graph that holds it");
        }
    }

    /**
     * {@return a copy of this graph ({@code cuGraphClone}): the same nodes and dependencies, holding what
     * this graph holds} Nodes added to either later do not change the other; the copy's nodes
     * are its own, so the {@link GraphNode}s of this graph do not name them. A graph with
     * conditional nodes is not copied: build it again.
     *
     * @throws IllegalStateException when this graph is closed or is a conditional node's body,
     *     has memory nodes ({@link #hasMemoryNodes()}) or conditional nodes (the driver clones
     *     neither: {@code CUDA_ERROR_NOT_SUPPORTED}), and for what {@link #instantiate()} refuses
     */
    public Graph copy() {
        checkNotBody("copy");
        checkOpen();
        if (resource.memory != null) {
            throw new IllegalStateException(this + " has memory allocation or free nodes, and the driver cannot clone "
                    + "such a graph; capture it again instead");
        }
        synchronized (resource.building) {
            if (!resource.bodies.isEmpty()) { // every conditional node has at least one body
                throw new IllegalStateException(this + " has conditional nodes, and the driver cannot clone such a graph "
                        + "(cuGraphClone: CUDA_ERROR_NOT_SUPPORTED); build it again with the same add calls instead");
            }
            resource.checkConditionals();
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
     * @param file where to write the DOT text
     * @throws IllegalArgumentException when {@code file} is not on the default file system or
     *     its directory does not exist
     * @throws CudaException when the driver cannot write it
     */
    public void writeDot(Path file) {
        checkOpen();
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
                calls().printDot(handle, arena.allocateFrom(absolute.toString()));
            }
        }
    }

    /** Checks a node's view: open, of this graph's context, not empty; returns its buffer's owner. */
    private NativeResource checkTarget(DeviceView view, String what) {
        checkOpen();
        DeviceBuffer buffer = view.buffer();
        context.checkSame(buffer.context(), what);
        buffer.address(); // throws when the buffer is closed
        if (view.byteSize() == 0) {
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
                        + "nodes this graph's add methods or nodes() returned");
            }
            if (n.isRemoved()) {
                throw new IllegalArgumentException(n + " was removed from " + this + "; name only nodes it still has");
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

    /** The node just added, naming {@code names} (called under the building lock). */
    private GraphNode added(MemorySegment node, GraphNode.Kind kind, List<NativeResource> names) {
        GraphNode added = new GraphNode(this, node, kind, body == null ? resource.added++ : body.nodes++);
        known.put(node.address(), added);
        resource.namedByNode.put(node.address(), names);
        return added;
    }

    /** Throws when this graph or, for a body, the graph that owns it, or the view itself, is closed. */
    private void checkOpen() {
        resource.checkOpen();
        if (isClosed()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    private void checkNotBody(String what) {
        if (body != null) {
            throw new IllegalStateException("cannot " + what + " " + this + " on its own; " + what
                    + " the graph that holds its conditional node");
        }
    }

    /** Whether this is a conditional node's body (a view owned by the graph that holds the node). */
    boolean isBody() {
        return body != null;
    }

    @Override
    public String toString() {
        return body == null ? super.toString() : body.name;
    }

    private GraphBuildCalls calls() {
        return context.state().calls().graphBuilding();
    }

    private ConditionalCalls conditionals() {
        return context.state().calls().conditionals();
    }

    /** Creates an empty graph of {@code context} ({@link CudaContext#createGraph()}). */
    static Graph create(CudaContext context) {
        Graph g = new Graph(context, context.state().calls().graphBuilding().create(), new Holds());
        g.resource.handBuilt = true; // before anyone else sees it
        return g;
    }

    Resource resource() {
        return resource;
    }

    /** The driver's handle of this graph, or of this body. */
    MemorySegment handle() {
        return handle;
    }

    /**
     * The graph a Gatun capture records into, for its conditional handles and nodes, made once the
     * capture first needs it ({@link StreamCapture#createConditionalHandle}): it holds what the
     * capture holds ({@code holds}, shared), and a hold on itself until the capture is over
     * ({@link #captureOver}), so closing it meanwhile never destroys a graph the driver still records into.
     */
    static Graph ofCapture(CudaContext context, MemorySegment handle, Holds holds) {
        Graph g = new Graph(context, handle, holds);
        synchronized (g.resource.building) {
            g.resource.capturesOpen++;
        }
        g.resource.hold();
        return g;
    }

    /**
     * The capture that made this graph ({@link #ofCapture}) is over: {@code destroyed} when the
     * driver destroyed the graph with it (an invalidated capture) or the capture was aborted; the
     * graph is then closed, and retired without a destroy call when the driver destroyed it.
     */
    void captureOver(boolean destroyed, boolean destroyedByDriver) {
        synchronized (resource.building) {
            resource.capturesOpen--;
        }
        resource.destroyedByDriver = destroyedByDriver;
        if (destroyed) {
            close();
        }
        resource.unhold();
    }

    /**
     * Begins capturing {@code stream} into this conditional node's body
     * ({@code cuStreamBeginCaptureToGraph}): work queued on the stream from now on becomes nodes of
     * the body instead of running, until {@link StreamCapture#end()}, which returns this body. The
     * same capture gate rules as {@link Stream#beginCapture(CaptureMode)} apply; what the captured
     * work uses is held by the graph that owns the body. Capture the body of a node added to a
     * capture in progress ({@link StreamCapture#addWhile} and the others) on another stream while
     * that capture is open, as NVIDIA's graphConditionalNodes sample does, or the body of a node
     * of a graph built by hand.
     *
     * <p>A body holds only what the driver allows in one (kernel, memset, copy and conditional
     * nodes), so inside this capture Gatun refuses, before the driver sees them, stream-ordered
     * allocations ({@link Stream#allocate}: memory nodes), host functions
     * ({@link Stream#launchHostFunction}: host nodes) and stream memory operations
     * ({@link Stream#memOps()}), each with an {@link IllegalStateException}. A capture into a body
     * that is invalidated or aborted leaves part of its work in the body, which the driver cannot
     * take back: the graph that owns the body then refuses to be instantiated.
     *
     * @param stream a stream of this graph's context, not capturing
     * @param mode the driver's capture mode
     * @return the capture, to end or abort
     * @throws IllegalStateException when this graph is not a conditional node's body (capture a
     *     new graph with {@link Stream#beginCapture(CaptureMode)}), is closed, another capture
     *     records into it already, or the stream is closed or capturing
     * @throws DriverTooOldException on a driver older than CUDA 12.3, before any driver call
     * @throws CaptureActiveException when a global-mode capture cannot enter the gate in time
     */
    public StreamCapture beginCapture(Stream stream, CaptureMode mode) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(mode, "mode");
        checkOpen();
        if (body == null) {
            throw new IllegalStateException(this + " is not a conditional node's body; Gatun captures into bodies only: "
                    + "capture a new graph with stream.beginCapture(mode) instead");
        }
        context.checkSame(stream.context(), "the capturing stream");
        synchronized (resource.building) {
            if (body.capturing) {
                throw new IllegalStateException("a stream capture records into " + this + " already; end it first");
            }
            body.capturing = true;
            resource.capturesOpen++;
        }
        boolean begun = false;
        try {
            StreamCapture capture = StreamCapture.intoBody(stream, mode, this);
            begun = true;
            return capture;
        } finally {
            if (!begun) {
                bodyCaptureOver(null);
            }
        }
    }

    /** The holds of the graph that owns this body: what a capture into the body uses, the graph holds. */
    Holds ownerHolds() {
        return resource.holds;
    }

    /** The name of this body, when it is one, for a capture into it; else null. */
    String bodyName() {
        return body == null ? null : body.name;
    }

    /**
     * A capture into this body is over: {@code failure} null when it ended with its work in the
     * body (whose nodes are then counted, so an empty body is still refused at instantiation);
     * otherwise why part of its work may be left there, which makes the graph unusable.
     */
    void bodyCaptureOver(String failure) {
        synchronized (resource.building) {
            body.capturing = false;
            resource.capturesOpen--;
            if (failure != null && resource.unusable == null) {
                resource.unusable = failure;
            }
        }
    }

    /**
     * Counts the nodes a capture just recorded into this body ({@code cuGraphGetNodes}); call after
     * a successful end of that capture. When the listing fails, the graph is marked unusable, since
     * whether the body is empty is then unknown, and the failure is thrown.
     */
    void countCapturedNodes() {
        synchronized (resource.building) {
            try (Arena arena = Arena.ofConfined()) {
                long listed = context.state().calls().graphs().nodes(handle, arena).byteSize()
                        / ValueLayout.ADDRESS.byteSize();
                body.nodes += (int) listed - (body.nodes - body.removed);
            } catch (RuntimeException e) {
                if (resource.unusable == null) {
                    resource.unusable = "the nodes captured into " + body.name + " could not be listed (" + e.getMessage()
                            + "), so whether it is empty is unknown: build the graph again";
                }
                throw e;
            }
        }
    }
}
