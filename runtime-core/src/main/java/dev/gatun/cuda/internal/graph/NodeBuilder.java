package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.internal.context.HostCallback;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.driver.GraphBuildCalls;
import dev.gatun.cuda.internal.driver.GraphCalls;
import dev.gatun.cuda.internal.launch.KernelNodes;
import dev.gatun.cuda.internal.launch.MemOpParams;
import dev.gatun.cuda.internal.memory.PinnedMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The one add-node path of a graph or of one body in it (each public {@code Graph} face has one):
 * every {@code add*} of the face checks its arguments and makes one call here, which, under the
 * graph's building lock and in one confined arena, checks the dependencies, holds what the node
 * will name before the driver can see the node, adds it, and records the node and the owners it
 * names ({@link #added}). Removing a node, programmatic edges, the listing and the DOT print take
 * the same lock. See the package's invariants.
 */
public final class NodeBuilder {

    private final GraphState graph;
    /** The graph nodes are added to: the root's handle, or a body's. */
    private final MemorySegment handle;
    /** What the graph knows of this body; null for the root. */
    private final GraphState.Body body;
    /** Its nodes the wing made or listed, by handle, so each is one {@link Node} (guarded by the graph's building lock). */
    private final Map<Long, Node> known = new HashMap<>();

    NodeBuilder(GraphState graph, MemorySegment handle, GraphState.Body body) {
        this.graph = graph;
        this.handle = handle;
        this.body = body;
    }

    /** The builder of {@code graph}'s root (one per graph: its face's). */
    public static NodeBuilder of(GraphState graph) {
        return new NodeBuilder(graph, graph.handle, null);
    }

    /** {@return the graph this root or body belongs to} */
    public GraphState graph() {
        return graph;
    }

    /** {@return the driver's handle of the root, or of this body} */
    public MemorySegment handle() {
        return handle;
    }

    /** {@return whether this is a conditional node's body} */
    public boolean isBody() {
        return body != null;
    }

    /** Refuses to {@code what} a body on its own (instantiate, copy): only the graph that holds its node can be. */
    public void checkRoot(String what) {
        if (body != null) {
            throw new IllegalStateException("cannot " + what + " " + name() + " on its own; " + what
                    + " the graph that holds its conditional node");
        }
    }

    /** {@return the name its face goes by: the graph's identity, or the body's name} */
    public String name() {
        return body == null ? graph.identity() : body.name;
    }

    /** A kernel node that launches {@code function} with {@code config} and a copy of {@code kernelParams}; it names the module and the buffers. */
    public Node kernel(Node[] dependencies, MemorySegment function, LaunchConfig config, MemorySegment kernelParams,
            NativeResource module, List<NativeResource> buffers) {
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                MemorySegment params = KernelNodes.params(function, config, kernelParams, arena);
                graph.holds.add(module); // before the node can launch it
                graph.holds.addAll(buffers);
                List<NativeResource> names = new ArrayList<>(buffers);
                names.add(module);
                // The launch checked its arguments against the kernel at prepare; the buffers
                // they name are open and now held by this graph.
                return added(calls().addKernel(handle, deps, params), NodeKind.KERNEL, names);
            }
        }
    }

    /** A memset node: {@code count} elements of {@code elementSize} bytes (1 or 4) at {@code address}, inside {@code buffer}. */
    public Node memset(Node[] dependencies, NativeResource buffer, long address, int value, int elementSize, long count) {
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                graph.holds.add(buffer);
                return added(calls().addMemset(handle, deps, address, value, elementSize, count, arena), NodeKind.MEMSET,
                        List.of(buffer));
            }
        }
    }

    /** A device-to-device copy node of {@code bytes} from {@code fromAddress} (inside {@code from}) to {@code toAddress} (inside {@code to}). */
    public Node copy(Node[] dependencies, NativeResource to, long toAddress, NativeResource from, long fromAddress,
            long bytes) {
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                graph.holds.add(to);
                graph.holds.add(from);
                return added(calls().addCopy(handle, deps, toAddress, false, fromAddress, false, bytes, arena),
                        NodeKind.COPY, List.of(to, from));
            }
        }
    }

    /** A copy node between checked device and pinned ranges, to the device when {@code toDevice}; it names both buffers. */
    public Node hostCopy(Node[] dependencies, NativeResource device, long deviceAddress, PinnedMemory pinned,
            long hostAddress, boolean toDevice, long bytes) {
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                graph.holds.add(device);
                graph.holds.add(pinned);
                MemorySegment node = toDevice
                        ? calls().addCopy(handle, deps, deviceAddress, false, hostAddress, true, bytes, arena)
                        : calls().addCopy(handle, deps, hostAddress, true, deviceAddress, false, bytes, arena);
                return added(node, NodeKind.COPY, List.of(device, pinned));
            }
        }
    }

    /** An event record node ({@code record}) or event wait node on {@code eventHandle}, whose owner is {@code event}. */
    public Node event(Node[] dependencies, NativeResource event, MemorySegment eventHandle, boolean record) {
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                graph.holds.add(event); // before the node can name it: no destroy while the graph lives
                MemorySegment node = record
                        ? calls().addEventRecord(handle, deps, eventHandle)
                        : calls().addEventWait(handle, deps, eventHandle);
                return added(node, record ? NodeKind.EVENT_RECORD : NodeKind.EVENT_WAIT, List.of(event));
            }
        }
    }

    /** A batch memory-operation node running {@code ops} (checked), which name {@code targets}. */
    public Node batchMemOps(Node[] dependencies, List<NativeResource> targets, List<MemOpParams.Op> ops) {
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = dependencies(dependencies, arena);
                targets.forEach(graph.holds::add); // before the node names them: no free while the graph lives
                MemorySegment params = MemOpParams.encode(ops, arena);
                return added(graph.context().calls().memOps().addBatchNode(handle, deps, ops.size(), params, arena),
                        NodeKind.BATCH_MEM_OP, targets);
            }
        }
    }

    /** A host node running {@code callback} on the driver's thread at every launch; it names the callback. */
    public Node host(Node[] dependencies, Runnable callback) {
        HostCallback held = new HostCallback(graph.context(), callback);
        try {
            synchronized (graph.building) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment deps = dependencies(dependencies, arena);
                    graph.holds.add(held); // before the node can run it
                    return added(calls().addHost(handle, deps, held.token(), arena), NodeKind.HOST, List.of(held));
                }
            }
        } finally {
            held.close(); // the graph's hold keeps it registered; without one (a refusal) it goes now
        }
    }

    /**
     * A child graph node running a copy of {@code child} (the root of another open graph); it
     * names what {@code child} holds now.
     *
     * @throws IllegalArgumentException when {@code child} is this graph, one of its bodies or a
     *     body elsewhere, has memory nodes or conditional nodes, or a capture still records into it
     */
    public Node child(Node[] dependencies, NodeBuilder of) {
        if (of.graph == graph) {
            throw new IllegalArgumentException(of.name() + " is this graph or one of its bodies; a graph cannot "
                    + "contain itself: add a copy() of it instead");
        }
        if (of.isBody()) {
            throw new IllegalArgumentException(of.name() + " is a conditional node's body; add the graph that holds it");
        }
        GraphState child = of.graph;
        if (child.hasMemoryNodes()) {
            throw new IllegalArgumentException(of.name() + " has memory allocation or free nodes, which the driver "
                    + "does not allow in a child graph; capture the work into this graph instead");
        }
        // Both graphs' building locks, in the order of their ids: the child cannot change while
        // it is copied, and two threads adding each other's graphs cannot deadlock.
        GraphState first = graph.id() < child.id() ? graph : child;
        GraphState second = first == graph ? child : graph;
        synchronized (first.building) {
            synchronized (second.building) {
                if (child.capturesOpen > 0) {
                    throw new IllegalArgumentException("a stream capture still records into " + child.identity()
                            + " or a body in it; end that capture first");
                }
                if (!child.bodies.isEmpty()) {
                    throw new IllegalArgumentException(child.identity() + " has conditional nodes; Gatun does not add "
                            + "such a graph as a child (its handles belong to it): add the conditional nodes to this "
                            + "graph");
                }
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment deps = dependencies(dependencies, arena);
                    List<NativeResource> names = child.holds.snapshot();
                    graph.holds.addAll(names); // before the copy names them
                    return added(calls().addChild(handle, deps, child.handle), NodeKind.CHILD_GRAPH, names);
                }
            }
        }
    }

    /**
     * Removes {@code node} of this graph ({@code cuGraphDestroyNode}), and, in a graph built by
     * hand, lets go of each owner it named that no other node names.
     *
     * @throws IllegalArgumentException when it is of another graph, or a conditional node
     * @throws IllegalStateException when it was removed already
     */
    public void remove(Node node) {
        if (node.graph() != this) {
            throw new IllegalArgumentException(node + " is not a node of " + name() + "; remove it from its own graph");
        }
        if (node.kind() == NodeKind.CONDITIONAL) {
            throw new IllegalArgumentException(node + " is a conditional node; Gatun does not remove those (their "
                    + "bodies and handles are checked at instantiation): build the graph again without it");
        }
        List<NativeResource> release = new ArrayList<>();
        synchronized (graph.building) {
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
            List<NativeResource> names = graph.namedByNode.remove(node.handle().address());
            if (names != null && graph.handBuilt()) {
                for (NativeResource r : names) {
                    if (!release.contains(r) && !namedByAnotherNode(r)) {
                        release.add(r);
                    }
                }
            }
        }
        // Outside the building lock: a last hold let go retires its owner, which may record fences.
        for (NativeResource r : release) {
            graph.holds.remove(r);
        }
    }

    private boolean namedByAnotherNode(NativeResource owner) {
        for (List<NativeResource> names : graph.namedByNode.values()) {
            if (names.contains(owner)) {
                return true;
            }
        }
        return false;
    }

    /**
     * A programmatic (or, {@code launchOrder}, launch-order) edge from kernel node {@code producer}
     * to kernel node {@code consumer} of this graph, on a device of compute capability 9.0 or newer
     * ({@code capabilities}, asked only once the nodes passed).
     *
     * @throws IllegalArgumentException for a node that is not a kernel node of this graph, the
     *     same node twice, or an older device
     */
    public void programmaticEdge(Node producer, Node consumer, boolean launchOrder,
            Supplier<DeviceCapabilities> capabilities) {
        checkKernelNode(producer, "producer");
        checkKernelNode(consumer, "consumer");
        if (producer == consumer) {
            throw new IllegalArgumentException(producer + " cannot depend on itself; name two kernel nodes");
        }
        DeviceCapabilities caps = capabilities.get();
        if (caps.computeMajor() < 9) {
            throw new IllegalArgumentException("programmatic dependencies need compute capability 9.0 or newer, this "
                    + "device has " + caps.computeCapability() + "; name the producer as an ordinary dependency instead");
        }
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                calls().addProgrammaticEdge(handle, producer.handle(), consumer.handle(), launchOrder, arena);
            }
        }
    }

    private void checkKernelNode(Node node, String role) {
        Objects.requireNonNull(node, role);
        if (node.graph() != this || node.isRemoved()) {
            throw new IllegalArgumentException("the " + role + ", " + node + ", is not a node of " + name()
                    + (node.isRemoved() ? " any more" : "") + "; name kernel nodes this graph has");
        }
        if (node.kind() != NodeKind.KERNEL) {
            throw new IllegalArgumentException("the " + role + ", " + node + ", is not a kernel node; programmatic "
                    + "dependencies join kernel nodes only");
        }
    }

    /**
     * {@return every node of this graph or body ({@code cuGraphGetNodes}), in the driver's order} A
     * node added here is listed as itself; one the wing did not add gets a node with index -1 the
     * first time, and the same one afterwards.
     */
    public List<Node> nodes() {
        GraphCalls graphs = graph.context().calls().graphs();
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment handles = graphs.nodes(handle, arena);
                int n = (int) (handles.byteSize() / ValueLayout.ADDRESS.byteSize());
                List<Node> listed = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    MemorySegment h = handles.getAtIndex(ValueLayout.ADDRESS, i);
                    Node node = known.get(h.address());
                    if (node == null) {
                        node = new Node(this, h, kindOf(graphs.nodeType(h)), -1);
                        known.put(h.address(), node);
                    }
                    listed.add(node);
                }
                return List.copyOf(listed);
            }
        }
    }

    /** The kind of a {@code CU_GRAPH_NODE_TYPE_*} the driver reported. */
    private static NodeKind kindOf(int type) {
        NodeKind kind = NodeKind.ofDriverType(type);
        if (kind == null) {
            throw new IllegalStateException("the driver reports node type " + type + ", which this version of Gatun "
                    + "does not know; update Gatun");
        }
        return kind;
    }

    /**
     * Writes the graph in Graphviz DOT to {@code file} ({@code cuGraphDebugDotPrint}).
     *
     * @throws IllegalArgumentException when {@code file} is not on the default file system or
     *     its directory does not exist
     */
    public void writeDot(Path file) {
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
        synchronized (graph.building) {
            try (Arena arena = Arena.ofConfined()) {
                calls().printDot(handle, arena.allocateFrom(absolute.toString()));
            }
        }
    }

    /** The dependency array the driver takes, checked: nodes of this graph, each once (under the building lock). */
    MemorySegment dependencies(Node[] nodes, Arena arena) {
        Objects.requireNonNull(nodes, "dependencies; pass none instead of null");
        if (nodes.length == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment array = arena.allocate(ValueLayout.ADDRESS, nodes.length);
        for (int i = 0; i < nodes.length; i++) {
            Node n = Objects.requireNonNull(nodes[i], "dependency " + i + " is null");
            if (n.graph() != this) {
                throw new IllegalArgumentException(n + " is not a node of " + name() + "; name as dependencies only "
                        + "nodes this graph's add methods or nodes() returned");
            }
            if (n.isRemoved()) {
                throw new IllegalArgumentException(n + " was removed from " + name() + "; name only nodes it still has");
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
    Node added(MemorySegment node, NodeKind kind, List<NativeResource> names) {
        Node added = new Node(this, node, kind, body == null ? graph.added++ : body.nodes++);
        known.put(node.address(), added);
        graph.namedByNode.put(node.address(), names);
        return added;
    }

    /** What the graph knows of this body; null for the root. */
    GraphState.Body body() {
        return body;
    }

    private GraphBuildCalls calls() {
        return graph.context().calls().graphBuilding();
    }
}
