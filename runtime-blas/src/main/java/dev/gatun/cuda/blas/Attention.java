package dev.gatun.cuda.blas;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.ForeignWork;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;

/**
 * cuDNN's scaled-dot-product attention forward prepared for one {@link AttentionSpec}
 * ({@link Blas#attention}): the backend graph and its execution plan made once
 * ({@link AttentionGraph}), then {@link #run} any number of times on any streams of the context.
 *
 * <p>A run checks its views, reads the stream's workspace (one map read; the plan's workspace
 * comes from it, so attentions and GEMMs on a stream share one), and submits one
 * {@code cudnnBackendExecute} through {@link Stream#submitForeign}, with the context's cuDNN
 * handle bound to the stream under its lock ({@link CudnnBinding}: only when it serves another
 * stream). The variant pack (the device pointers by tensor uid, and the workspace) is a cuDNN
 * descriptor that cannot change once finalized, so it is built again only when an operand's or
 * the workspace's address changes: a warm run with the same buffers makes that one library call
 * and allocates nothing, so it can be captured. Runs from several threads are serialized (the
 * variant pack and the operand slots are this object's), and a close waits for a run in
 * progress: a plan destroyed under cuDNN's call would be a crash, not an exception.
 */
public final class Attention implements AutoCloseable {

    private static final int Q = 0;
    private static final int K = 1;
    private static final int V = 2;
    private static final int O = 3;
    private static final int WORKSPACE = 4;

    private final Blas blas;
    private final BlasCalls calls;
    private final AttentionSpec spec;
    private final MemorySegment handle;
    private final AttentionGraph graph;
    /** The variant pack's value arrays and the scalars: freed at close. */
    private final Arena arena;
    /** The variant pack's values: the uids, the pointers (device, then the by-value scalars' host memory), the workspace pointer. */
    private final MemorySegment uids;
    private final MemorySegment pointers;
    private final MemorySegment workspacePointer;
    private final int tensors;
    /** The addresses the variant pack holds (Q, K, V, O, the workspace); meaningful while pack is not null. */
    private final long[] packed = new long[5];
    private MemorySegment pack;
    private final Operands operands = new Operands(5);
    private final ForeignWork work = this::submit;
    /** The stream of the run in progress, for the handle's binding. */
    private Stream runStream;
    private boolean closed;

    Attention(Blas blas, AttentionSpec spec) {
        this.blas = blas;
        this.calls = blas.calls();
        this.spec = spec;
        this.handle = blas.cudnnHandle();
        // Safety: the graph and plan name the handle, which cuDNN does not let two threads use at
        // once; building a plan may load the kernels it compiles, into the current context.
        synchronized (blas.cudnnBinding) {
            blas.checkOpen();
            calls.makeCurrent(blas.context().handle(), "cudnnBackendFinalize(execution plan)");
            this.graph = AttentionGraph.build(calls, handle, spec);
        }
        this.arena = Arena.ofShared();
        this.tensors = spec.causalMask() ? 6 : 5;
        this.uids = arena.allocate(ValueLayout.JAVA_LONG, tensors);
        this.pointers = arena.allocate(ValueLayout.ADDRESS, tensors);
        this.workspacePointer = arena.allocate(ValueLayout.ADDRESS);
        long[] ids = {AttentionGraph.UID_Q, AttentionGraph.UID_K, AttentionGraph.UID_V, AttentionGraph.UID_O,
                AttentionGraph.UID_SCALE, AttentionGraph.UID_NEG_INF};
        for (int i = 0; i < tensors; i++) {
            uids.setAtIndex(ValueLayout.JAVA_LONG, i, ids[i]);
        }
        // The by-value scalars: cuDNN reads them through these pointers at each execute (and bakes
        // them into a captured graph), so they live in this attention's memory, never changed.
        MemorySegment scale = arena.allocateFrom(ValueLayout.JAVA_FLOAT, spec.scale());
        pointers.setAtIndex(ValueLayout.ADDRESS, 4, scale);
        if (spec.causalMask()) {
            pointers.setAtIndex(ValueLayout.ADDRESS, 5, arena.allocateFrom(ValueLayout.JAVA_FLOAT,
                    Float.NEGATIVE_INFINITY));
        }
    }

    /** {@return the spec this attention was prepared for} */
    public AttentionSpec spec() {
        return spec;
    }

    /** {@return the device workspace its plan needs (from the stream's, {@link Blas#workspaceBytes()})} */
    public long workspaceBytes() {
        return graph.workspaceBytes();
    }

    /**
     * Queues {@code o = softmax(scale q k^T [+ mask]) v} on {@code stream}.
     *
     * @param stream a stream of the context
     * @param q Q, of the spec's type, at least {@link AttentionSpec#bytesQ()} bytes, 16-byte aligned
     * @param k K, likewise with {@link AttentionSpec#bytesKv()} bytes
     * @param v V, likewise
     * @param o O, written, as Q
     * @throws IllegalArgumentException when a view's type, size or alignment does not fit the spec
     *     (before anything is queued)
     * @throws IllegalStateException when closed, or when the plan needs more workspace than the
     *     stream's ({@link Blas#setWorkspaceBytes})
     * @throws BlasException when cuDNN refuses the call
     */
    public synchronized void run(Stream stream, DeviceView q, DeviceView k, DeviceView v, DeviceView o) {
        if (closed) {
            throw new IllegalStateException("this attention is closed");
        }
        blas.checkOpen();
        GemmSpec.checkView("Q", q, spec.type(), spec.bytesQ());
        GemmSpec.checkView("K", k, spec.type(), spec.bytesKv());
        GemmSpec.checkView("V", v, spec.type(), spec.bytesKv());
        GemmSpec.checkView("O", o, spec.type(), spec.bytesQ());
        Blas.Workspace w = blas.workspace(stream);
        if (w.bytes() < graph.workspaceBytes()) {
            throw new IllegalStateException("this attention's cuDNN plan needs " + graph.workspaceBytes() + " bytes of "
                    + "workspace, but the stream's is " + w.bytes() + ": call Blas.setWorkspaceBytes("
                    + graph.workspaceBytes() + ") or more before the run (the stream gets a workspace of the new size "
                    + "at its next operation)");
        }
        operands.set(Q, q);
        operands.set(K, k);
        operands.set(V, v);
        operands.set(O, o);
        operands.views[WORKSPACE] = w.view();
        try {
            if (pack == null || packed[Q] != q.address() || packed[K] != k.address() || packed[V] != v.address()
                    || packed[O] != o.address() || packed[WORKSPACE] != w.address().address()) {
                repack(q, k, v, o, w);
            }
            runStream = stream;
            stream.submitForeign(work, operands.views); // Q, K, V, O and the workspace
        } finally {
            runStream = null;
            operands.clear();
        }
        blas.attentions.increment();
    }

    /**
     * A variant pack for these addresses, replacing the old one (destroyed first: a failure
     * leaves none, and the next run builds one).
     */
    private void repack(DeviceView q, DeviceView k, DeviceView v, DeviceView o, Blas.Workspace w) {
        if (pack != null) {
            calls.backendDestroy(pack);
            pack = null;
        }
        long[] addresses = {q.address(), k.address(), v.address(), o.address()};
        for (int i = 0; i < addresses.length; i++) {
            pointers.setAtIndex(ValueLayout.JAVA_LONG, i, addresses[i]);
        }
        workspacePointer.set(ValueLayout.ADDRESS, 0, w.address());
        // cuDNN copies the uids and pointers into the descriptor; the arrays may change afterwards.
        MemorySegment made = calls.backendCreate(Cudnn.CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR(), "variant pack");
        try {
            calls.backendSet(made, Cudnn.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS(), Cudnn.CUDNN_TYPE_INT64(), tensors, uids,
                    "variant pack");
            calls.backendSet(made, Cudnn.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS(), Cudnn.CUDNN_TYPE_VOID_PTR(), tensors,
                    pointers, "variant pack");
            calls.backendSet(made, Cudnn.CUDNN_ATTR_VARIANT_PACK_WORKSPACE(), Cudnn.CUDNN_TYPE_VOID_PTR(), 1,
                    workspacePointer, "variant pack");
            calls.backendFinalize(made, "variant pack");
        } catch (RuntimeException e) {
            calls.backendDestroy(made);
            throw e;
        }
        pack = made;
        System.arraycopy(addresses, 0, packed, 0, addresses.length);
        packed[WORKSPACE] = w.address().address();
    }

    /** The library call, under the stream's lock with the context current (Stream.submitForeign). */
    private void submit(MemorySegment stream) {
        // Safety: the plan and the variant pack are live (this open attention owns them, and its
        // monitor keeps close out); the pack holds the addresses of the views checked above
        // against the spec (type, bytes, 16-byte alignment: the tensors' stated alignment), open
        // buffers of this context listed on this stream, as is the workspace, at least as large as
        // the plan needs; the scalars' host memory is this attention's. The handle is bound to this
        // stream and used under its lock.
        synchronized (blas.cudnnBinding) {
            try {
                blas.cudnnBinding.bind(calls, handle, runStream, stream);
                calls.backendExecute(handle, graph.plan(), pack);
            } catch (RuntimeException e) {
                blas.cudnnBinding.forget();
                throw e;
            } finally {
                Reference.reachabilityFence(this);
            }
        }
    }

    /**
     * Destroys the variant pack and every descriptor of the graph and plan (host objects: work
     * already queued does not need them), after a run in progress on another thread has queued
     * its work. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (pack != null) {
            calls.backendDestroy(pack);
            pack = null;
        }
        graph.destroy();
        arena.close();
    }

    /**
     * {@return the spec, and which of cuDNN's graphs, engine configuration and workspace the plan
     * was built from} (for instance {@code Attention[..., one SDPA_FWD operation, engine
     * configuration 0 of 3, workspace 0 bytes]}), fixed when the attention was made (the graph is
     * published through a final field)
     */
    @Override
    public String toString() {
        return "Attention[" + spec + ", " + graph.describe() + "]";
    }
}
