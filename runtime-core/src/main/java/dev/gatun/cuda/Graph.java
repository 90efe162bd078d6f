package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.driver.ConditionalCalls;
import dev.gatun.cuda.internal.graph.CaptureSession;
import dev.gatun.cuda.internal.graph.Conditionals;
import dev.gatun.cuda.internal.graph.ExecState;
import dev.gatun.cuda.internal.graph.GraphState;
import dev.gatun.cuda.internal.graph.Node;
import dev.gatun.cuda.internal.graph.NodeBuilder;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

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
    /** The graph's state; a body view shares the one of the graph that owns it. */
    private final GraphState state;
    /** Where nodes are added: the graph's root, or a body's. */
    private final NodeBuilder builder;
    /** The graph whose conditional node this body belongs to; null for a graph of its own. */
    private final Graph parent;
    /** The buffers allocated in its capture and not freed there, in allocation order. */
    private final List<DeviceBuffer> allocations;
    /** The face of each node its builder made or listed, so each node is one {@link GraphNode}. */
    private final Map<Node, GraphNode> faces = new ConcurrentHashMap<>();

    /** A graph of its own over {@code state}: built by hand, a copy, or what a capture recorded, with its open {@code allocations}. */
    Graph(CudaContext context, GraphState state, List<DeviceBuffer> allocations) {
        super(state);
        this.context = context;
        this.state = state;
        this.builder = NodeBuilder.of(state);
        this.parent = null;
        this.allocations = List.copyOf(allocations);
    }

    /** A view of a body the driver created for a conditional node of {@code parent}. */
    private Graph(Graph parent, NodeBuilder body) {
        super(parent.state, Tie.VIEWS);
        this.context = parent.context;
        this.state = parent.state;
        this.builder = body;
        this.parent = parent;
        this.allocations = List.of();
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
        return state.hasMemoryNodes();
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
        builder.checkRoot("instantiate");
        return new GraphExec(context, ExecState.instantiate(state, context.ladder()));
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
        return face(builder.kernel(GraphNode.nodesOf(dependencies), kernel.function(), launch.config(),
                launch.params().kernelParams(), kernel.module(), buffers));
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
        return face(builder.memset(GraphNode.nodesOf(dependencies), buffer, destination.address(), value & 0xff, 1,
                destination.byteSize()));
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
        return face(builder.memset(GraphNode.nodesOf(dependencies), buffer, destination.address(), value, 4,
                destination.byteSize() / 4));
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
        return face(builder.copy(GraphNode.nodesOf(dependencies), to, destination.address(), from, source.address(),
                bytes));
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
        return addEventNode(event, dependencies, true);
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
        return addEventNode(event, dependencies, false);
    }

    private GraphNode addEventNode(Event event, GraphNode[] dependencies, boolean record) {
        checkOpen();
        checkNotInBody("the driver", "the event node");
        Objects.requireNonNull(event, "event");
        NativeResource owner = event.checkedOwnerFor(context, record ? "the event to record" : "the event to wait for");
        return face(builder.event(GraphNode.nodesOf(dependencies), owner, event.handle(), record));
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
        checkNotInBody("the driver", "the memory operations");
        List<MemOp> checked = MemOp.checkBatch(ops, context);
        List<NativeResource> targets = checked.stream().map(op -> op.targetOf(context)).toList();
        return face(builder.batchMemOps(GraphNode.nodesOf(dependencies), targets, MemOp.encoded(checked)));
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
        checkOpen();
        return new ConditionalHandle(this, Conditionals.createHandle(builder, defaultValue, true), defaultValue, true);
    }

    /**
     * {@return a new conditional handle of this graph whose value no launch resets: it keeps what a kernel
     * set last, also from one launch to the next, and is undefined until a kernel sets it} Set
     * it in a node that every conditional node using it depends on. Otherwise as
     * {@link #createConditionalHandle(int)}.
     */
    public ConditionalHandle createConditionalHandleSetByKernels() {
        checkOpen();
        return new ConditionalHandle(this, Conditionals.createHandle(builder, 0, false), 0, false);
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
        return addConditional(handle, ConditionalNode.Type.IF, 1, dependencies, null, null);
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
        return addConditional(handle, ConditionalNode.Type.IF, 2, dependencies, null, null);
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
        return addConditional(handle, ConditionalNode.Type.WHILE, 1, dependencies, null, null);
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
        return addConditional(handle, ConditionalNode.Type.SWITCH, cases, dependencies, null, null);
    }

    /**
     * Adds a conditional node after {@code dependencies}; or, for {@code capture}, which records into
     * this graph, after its dependencies ({@code info}, read under the stream's lock, still held),
     * as its only dependency from then on ({@link StreamCapture#addIf} and the others).
     */
    ConditionalNode addConditional(ConditionalHandle handle, ConditionalNode.Type type, int bodies,
            GraphNode[] dependencies, ConditionalCalls.CaptureInfo info, CaptureSession capture) {
        checkOpen();
        Objects.requireNonNull(handle, "handle").checkUsableIn(this);
        Conditionals.Added added = capture == null
                ? Conditionals.add(builder, GraphNode.nodesOf(dependencies), handle.value(), type.driverType(), bodies)
                : Conditionals.addToCapture(builder, info, capture.streamHandle(), handle.value(), type.driverType(),
                        bodies);
        List<Graph> views = added.bodies().stream().map(body -> new Graph(this, body)).toList();
        return new ConditionalNode(face(added.node()), type, handle, views);
    }

    /** The graph whose conditional node this body belongs to; null for a graph of its own. */
    Graph parent() {
        return parent;
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
        long host = Objects.requireNonNull(source, "upload source").nodeRange(context, sourceOffset,
                destination.byteSize(), "upload source");
        return face(builder.hostCopy(GraphNode.nodesOf(dependencies), device, destination.address(), source.memory(),
                host, true, destination.byteSize()));
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
        long host = Objects.requireNonNull(destination, "download destination").nodeRange(context,
                destinationOffset, source.byteSize(), "download destination");
        return face(builder.hostCopy(GraphNode.nodesOf(dependencies), device, source.address(), destination.memory(),
                host, false, source.byteSize()));
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
        checkNotInBody("Gatun", "a host node");
        return face(builder.host(GraphNode.nodesOf(dependencies), callback));
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
        checkNotInBody("Gatun", "a child graph node");
        Objects.requireNonNull(child, "child");
        context.checkSame(child.context(), "the child graph");
        child.checkOpen();
        return face(builder.child(GraphNode.nodesOf(dependencies), child.builder));
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
        try {
            builder.remove(node.node());
        } finally {
            if (node.isRemoved()) {
                faces.remove(node.node()); // the driver lists it no more
            }
        }
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
        builder.programmaticEdge(GraphNode.nodeOf(producer), GraphNode.nodeOf(consumer), launchOrder,
                context.device()::capabilities);
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
        return builder.nodes().stream().map(this::face).toList();
    }

    /** Refuses a node a body may not hold ({@code who} says so) before any driver call. */
    private void checkNotInBody(String who, String what) {
        if (builder.isBody()) {
            throw new IllegalStateException(this + " is a conditional node's body, which " + who + " lets hold only "
                    + "kernel, memset, copy and conditional nodes; add " + what + " to the graph that holds it");
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
        builder.checkRoot("copy");
        checkOpen();
        return new Graph(context, state.copy(), List.of());
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
        builder.writeDot(file);
    }

    /** Checks a node's view (see {@link DeviceView#nodeTarget}) once this graph is open. */
    private NativeResource checkTarget(DeviceView view, String what) {
        checkOpen();
        return view.nodeTarget(context, what);
    }

    /** The one face of {@code node}, a node of this graph or body. */
    private GraphNode face(Node node) {
        return faces.computeIfAbsent(node, n -> new GraphNode(this, n));
    }

    /** Throws when this graph or, for a body, the graph that owns it, or the view itself, is closed. */
    private void checkOpen() {
        state.checkOpen();
        if (isClosed()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public String toString() {
        return builder.name();
    }

    /** Creates an empty graph of {@code context} ({@link CudaContext#createGraph()}). */
    static Graph create(CudaContext context) {
        return new Graph(context, GraphState.create(context.state()), List.of());
    }

    /** The graph's state, shared by its bodies. */
    GraphState state() {
        return state;
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
        if (!builder.isBody()) {
            throw new IllegalStateException(this + " is not a conditional node's body; Gatun captures into bodies only: "
                    + "capture a new graph with stream.beginCapture(mode) instead");
        }
        context.checkSame(stream.context(), "the capturing stream");
        return StreamCapture.intoBody(stream, mode, this);
    }

    /** Where nodes are added: for a capture into this body, for an update to this graph. */
    NodeBuilder builder() {
        return builder;
    }
}
