package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.internal.driver.HostFunction;
import dev.gatun.cuda.internal.graph.NodeKind;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.IntSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The one contract every kind of graph node keeps, run over each kind and each holder on the
 * simulated driver: what a node names (a buffer, a module, an event, a pinned buffer, a mapped
 * word, a host callback, what a child graph held, an allocation of the graph's capture) is held,
 * after its owner is closed, until the graph that holds the node (the graph itself, the graph a
 * body belongs to, a clone of it, and every executable of it) is gone; it is then released,
 * exactly once; and the holder, once closed, refuses to be used again. A body refuses the kinds
 * the driver does not allow in one, and a clone the graphs the driver does not clone, each
 * before anything is held. A new kind of node is a new row here; {@link #everyAddMethodOfGraphHasARow}
 * fails until it has one.
 */
class GraphNodeKindsContractTest {

    private static final int N = AddKernelFixture.N;

    /** Where the node is, and so what must be gone before what it names is released. */
    enum Holder {
        /** A graph built by hand (or captured), closed. */
        GRAPH,
        /** A body of a conditional node of a graph; the graph is closed (closing the body view holds on). */
        BODY,
        /** A copy of the graph ({@code copy()}): the graph is closed first, then the copy. */
        CLONE,
        /** An executable of the graph, launched once: the graph is closed first, then the executable. */
        EXECUTABLE
    }

    /** Each kind: the face method it exercises, whether a body may hold it and whether its graph is cloned. */
    enum Kind {
        KERNEL("addKernel", true, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.kernelAndBuffer();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addKernel(n.kernel.prepare(LaunchConfig.of(1, N), KernelArg.pointer(n.buffer), KernelArg.i32(N),
                        KernelArg.i32(1)));
            }
        },
        MEMSET("addMemset", true, true) {
            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addMemset(n.buffer.bytes(), (byte) 7);
            }
        },
        FILL("addFill", true, true) {
            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addFill(n.buffer.asInts(), 7);
            }
        },
        COPY("addCopy", true, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.twoBuffers();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addCopy(n.buffer.asInts(), n.other.asInts());
            }
        },
        UPLOAD("addUpload", true, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.bufferAndPinned();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addUpload(n.buffer.asInts(), n.pinned, 0);
            }
        },
        DOWNLOAD("addDownload", true, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.bufferAndPinned();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addDownload(n.pinned, 0, n.buffer.asInts());
            }
        },
        EVENT_RECORD("addEventRecord", false, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.event();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addEventRecord(n.event);
            }
        },
        EVENT_WAIT("addEventWait", false, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.event();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addEventWait(n.event);
            }
        },
        BATCH_MEM_OPS("addBatchMemOps", false, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.bufferAndMappedWord();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addBatchMemOps(List.of(MemOp.write32(n.buffer.asInts().slice(0, 1), 1, WriteFlag.DEFAULT),
                        MemOp.write32(n.word, 2, WriteFlag.DEFAULT)));
            }
        },
        HOST("addHost", false, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.hostCallback();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addHost(n.callback);
            }
        },
        CHILD_GRAPH("addChild", false, true) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.childGraph();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addChild(n.child);
            }
        },
        IF("addIf", true, false) {
            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addIf(g.createConditionalHandle(0)).body().addMemset(n.buffer.bytes(), (byte) 7);
            }
        },
        IF_ELSE("addIfElse", true, false) {
            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                ConditionalNode node = g.addIfElse(g.createConditionalHandle(0));
                node.bodies().get(0).addMemset(n.buffer.bytes(), (byte) 7);
                node.bodies().get(1).addFill(n.buffer.asInts(), 8);
            }
        },
        WHILE("addWhile", true, false) {
            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                g.addWhile(g.createConditionalHandle(0)).body().addMemset(n.buffer.bytes(), (byte) 7);
            }
        },
        SWITCH("addSwitch", true, false) {
            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                ConditionalNode node = g.addSwitch(g.createConditionalHandle(5), 2);
                node.bodies().get(0).addMemset(n.buffer.bytes(), (byte) 7);
                node.bodies().get(1).addFill(n.buffer.asInts(), 8);
            }
        },
        /** Allocation and free nodes: an allocation in a capture, left open at its end, is the graph's. */
        MEMORY_NODES("Stream.allocate in a capture", false, false) {
            @Override
            Named names(GraphNodeKindsContractTest t) {
                return t.graphAllocation();
            }

            @Override
            void add(GraphNodeKindsContractTest t, Graph g, Named n) {
                // Only a capture makes memory nodes; into a body, the allocation is refused.
                try (StreamCapture capture = g.beginCapture(t.captureStream, CaptureMode.THREAD_LOCAL)) {
                    t.captureStream.allocate(4 * N);
                }
            }
        };

        /** The face method a node of this kind is added with. */
        final String method;
        /** Whether the driver lets a conditional node's body hold it. */
        final boolean inBody;
        /** Whether a graph with it is cloned. */
        final boolean cloned;

        Kind(String method, boolean inBody, boolean cloned) {
            this.method = method;
            this.inBody = inBody;
            this.cloned = cloned;
        }

        /** What a node of this kind names, made for it; a buffer unless the kind says otherwise. */
        Named names(GraphNodeKindsContractTest t) {
            return t.buffer();
        }

        /** Adds one node of this kind to {@code g}, naming {@code n}. */
        abstract void add(GraphNodeKindsContractTest t, Graph g, Named n);

        /** A graph holding one node of this kind that names {@code n}. */
        Graph graph(GraphNodeKindsContractTest t, Named n) {
            Graph g = t.ctx.createGraph();
            add(t, g, n);
            return g;
        }
    }

    /**
     * What a node names: the owners the test closes before the holder, and how their release
     * shows ({@code released} counts up from 0 to {@code count}).
     */
    static final class Named {
        final List<AutoCloseable> owners = new ArrayList<>();
        DeviceBuffer buffer;
        DeviceBuffer other;
        Kernel kernel;
        PinnedBuffer pinned;
        Event event;
        MappedWord word;
        Runnable callback;
        Graph child;
        /** A graph a capture made, holding the allocation node. */
        Graph captured;
        int count;
        IntSupplier released;

        <T extends AutoCloseable> T owned(T owner) {
            owners.add(owner);
            return owner;
        }

        void closeOwners() throws Exception {
            for (AutoCloseable o : owners) {
                o.close();
            }
        }
    }

    private final AddKernelFixture fixture = new AddKernelFixture(new FakeDriverApi());
    private final Simulated sim = fixture.sim;
    private final CudaContext ctx = fixture.ctx;
    private final dev.gatun.cuda.Stream stream = fixture.stream;
    private final dev.gatun.cuda.Stream captureStream = ctx.createStream();
    private final int callbacksBefore = HostFunction.registered();
    private int modules;

    GraphNodeKindsContractTest() {
        sim.faults.countCalls();
    }

    @AfterEach
    void nothingLeft() {
        captureStream.close();
        fixture.close();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(callbacksBefore, HostFunction.registered());
    }

    static Stream<Arguments> kindsAndHolders() {
        return Arrays.stream(Kind.values())
                .flatMap(k -> Arrays.stream(Holder.values()).map(h -> Arguments.of(k, h)));
    }

    @ParameterizedTest
    @MethodSource("kindsAndHolders")
    void whatANodeNamesIsHeldUntilItsHoldersAreGoneThenReleasedOnceAndTheClosedHolderRefusesUse(Kind kind,
            Holder holder) throws Exception {
        Named n = kind.names(this);
        switch (holder) {
            case GRAPH -> {
                Graph g = kind == Kind.MEMORY_NODES ? n.captured : kind.graph(this, n);
                heldUntil(n, g);
                refusedAfterClose(kind, g);
            }
            case BODY -> {
                Graph g = ctx.createGraph();
                Graph body = g.addIf(g.createConditionalHandle(0)).body();
                if (!kind.inBody) {
                    assertThrows(IllegalStateException.class, () -> kind.add(this, body, n),
                            kind + ": a body refuses it");
                    g.close();
                    if (n.captured != null) {
                        n.captured.close(); // the graph its allocation node is in: it holds the allocation
                    }
                    releasedOnceWhenClosed(n, kind + " refused in a body: nothing holds what it names");
                    return;
                }
                kind.add(this, body, n);
                body.close(); // only the view: the graph owns its bodies
                heldUntil(n, g);
                refusedAfterClose(kind, body);
            }
            case CLONE -> {
                Graph g = kind == Kind.MEMORY_NODES ? n.captured : kind.graph(this, n);
                if (!kind.cloned) {
                    assertThrows(IllegalStateException.class, g::copy, kind + ": the driver does not clone it");
                    heldUntil(n, g);
                    return;
                }
                Graph copy = g.copy();
                n.closeOwners();
                g.close();
                ctx.reap();
                assertEquals(0, n.released.getAsInt(), kind + ": the copy holds what its node names");
                heldUntil(n, copy);
                refusedAfterClose(kind, copy);
            }
            case EXECUTABLE -> {
                Graph g = kind == Kind.MEMORY_NODES ? n.captured : kind.graph(this, n);
                GraphExec exec = g.instantiate();
                exec.launch(stream);
                stream.synchronize();
                n.closeOwners();
                g.close();
                ctx.reap();
                assertEquals(0, n.released.getAsInt(), kind + ": the executable holds what its graph's node names");
                exec.close();
                ctx.reap();
                releasedOnce(n, kind + ": released once the executable is gone");
                assertThrows(IllegalStateException.class, () -> exec.launch(stream), "a closed executable refuses");
            }
            default -> throw new AssertionError(holder);
        }
    }

    @Test
    void everyAddMethodOfGraphHasARow() {
        Set<String> methods = new TreeSet<>();
        for (Method m : Graph.class.getDeclaredMethods()) {
            if (Modifier.isPublic(m.getModifiers()) && m.getName().startsWith("add")
                    && (m.getReturnType() == GraphNode.class || m.getReturnType() == ConditionalNode.class)) {
                methods.add(m.getName());
            }
        }
        Set<String> rows = new TreeSet<>();
        for (Kind k : Kind.values()) {
            if (k != Kind.MEMORY_NODES) {
                rows.add(k.method);
            }
        }
        assertEquals(methods, rows, "each way Graph adds a node is a row of the contract");
    }

    @Test
    void theWingsNodeKindsAreThePublicOnes() {
        assertEquals(Arrays.stream(GraphNode.Kind.values()).map(Enum::name).toList(),
                Arrays.stream(NodeKind.values()).map(Enum::name).toList());
    }

    // ---- the contract's steps ----

    /** Closes what {@code n} names: still held while {@code holder} is open; released once when it closes. */
    private void heldUntil(Named n, Graph holder) throws Exception {
        n.closeOwners();
        ctx.reap();
        assertEquals(0, n.released.getAsInt(), holder + " holds what its node names");
        holder.close();
        ctx.reap();
        releasedOnce(n, "released once " + holder + " is gone");
    }

    private void releasedOnceWhenClosed(Named n, String why) throws Exception {
        n.closeOwners();
        ctx.reap();
        releasedOnce(n, why);
    }

    /** Released now, and never again: more reaps and closes change nothing. */
    private void releasedOnce(Named n, String why) throws Exception {
        assertEquals(n.count, n.released.getAsInt(), why);
        n.closeOwners(); // idempotent
        ctx.reap();
        assertEquals(n.count, n.released.getAsInt(), "exactly once: " + why);
    }

    /** A closed holder refuses a new node of the kind (with nothing left held: its owners are closed at once). */
    private void refusedAfterClose(Kind kind, Graph closed) throws Exception {
        Named again = kind.names(this);
        if (kind == Kind.MEMORY_NODES) {
            assertThrows(IllegalStateException.class, closed::instantiate, closed + " is closed");
        } else {
            assertThrows(IllegalStateException.class, () -> kind.add(this, closed, again), closed + " is closed");
        }
        if (again.captured != null) {
            again.captured.close();
        }
        again.closeOwners();
        ctx.reap();
        releasedOnce(again, kind + ": a refused node holds nothing");
    }

    // ---- what nodes name, and how its release shows ----

    /** Releases counted as the driver calls that free them, from now on. */
    private IntSupplier calls(String... functions) {
        int before = count(functions);
        return () -> count(functions) - before;
    }

    private int count(String... functions) {
        int n = 0;
        for (String f : functions) {
            n += sim.faults.calls(f);
        }
        return n;
    }

    private Named buffer() {
        Named n = new Named();
        n.buffer = n.owned(ctx.allocate(4 * N));
        n.count = 1;
        n.released = calls("cuMemFree_v2");
        return n;
    }

    private Named twoBuffers() {
        Named n = buffer();
        n.other = n.owned(ctx.allocate(4 * N));
        n.count = 2;
        return n;
    }

    /** A buffer and a kernel of a module of its own, unloaded with the buffer's close. */
    private Named kernelAndBuffer() {
        Named n = new Named();
        String module = "contract-" + modules++;
        ctx.modules().load(module, ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        n.buffer = n.owned(ctx.allocate(4 * N));
        n.kernel = n.owned(ctx.modules().kernel(module, "add"));
        n.owned(() -> ctx.modules().unload(module));
        n.count = 2;
        n.released = calls("cuMemFree_v2", "cuModuleUnload");
        return n;
    }

    private Named bufferAndPinned() {
        Named n = buffer();
        n.pinned = n.owned(ctx.allocatePinned(4 * N));
        n.count = 2;
        n.released = calls("cuMemFree_v2", "cuMemFreeHost");
        return n;
    }

    private Named event() {
        Named n = new Named();
        n.event = n.owned(ctx.createEvent());
        n.count = 1;
        n.released = calls("cuEventDestroy_v2");
        return n;
    }

    private Named bufferAndMappedWord() {
        Named n = buffer();
        n.word = n.owned(ctx.allocateMappedWord());
        n.count = 2;
        n.released = calls("cuMemFree_v2", "cuMemFreeHost");
        return n;
    }

    /** A host callback: the graph's hold keeps it registered for the driver's thread. */
    private Named hostCallback() {
        Named n = new Named();
        n.callback = () -> { };
        int before = HostFunction.registered();
        n.count = 1;
        // Registered while a graph holds it (read once the node was added, or refused): one more
        // than before while held, as many as before once released, fewer if released twice.
        n.released = () -> before + 1 - HostFunction.registered();
        return n;
    }

    /** A child graph naming a buffer: the parent's copy of it names the buffer too. */
    private Named childGraph() {
        Named n = buffer();
        n.child = n.owned(ctx.createGraph());
        n.child.addMemset(n.buffer.bytes(), (byte) 7);
        return n;
    }

    /**
     * A capture's allocation left open at its end: an allocation node of the captured graph,
     * whose release is its retirement (freed by the driver when a launch backed it).
     */
    private Named graphAllocation() {
        Named n = new Named();
        try (StreamCapture capture = captureStream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            n.buffer = n.owned(captureStream.allocate(4 * N));
            captureStream.memset(n.buffer.bytes(), (byte) 7);
            n.captured = capture.end();
        }
        long before = ctx.diagnostics().graphAllocationCounters().liveAllocations();
        n.count = 1;
        n.released = () -> (int) (before - ctx.diagnostics().graphAllocationCounters().liveAllocations());
        return n;
    }
}
