package dev.gatun.cuda.blas;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.api.NativeBlasApi;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * cuBLASLt, cuBLAS and cuDNN for one {@link CudaContext}: its handles, one workspace per stream,
 * and the operations prepared from it ({@link #matmul}, {@link #gemm}, {@link #softmax},
 * {@link #attention}), each
 * run as a submission on a Gatun {@link Stream} ({@link Stream#submitForeign}).
 *
 * <p><b>Lifecycle.</b> {@link #of} gives the context's one instance, made on first use: it checks
 * the libraries' versions, and creates the cuBLASLt and cuBLAS handles (the cuDNN handle on the
 * first {@link #softmax}). It closes with its context: at {@link CudaContext#close()} the
 * workspaces are closed, its open {@link Matmul}s closed (after a run in progress on another
 * thread) and the handles destroyed (its compute stream's {@link Stream#onClose} action); a later
 * {@code of} makes a new one. Create it before capturing graphs: creating a
 * handle allocates (the libraries' own device memory), which a global-mode capture forbids.
 *
 * <p><b>Workspaces.</b> One per stream, {@link #workspaceBytes()} bytes of Gatun device memory
 * ({@code CudaContext.allocate}, so in the context's counters too), allocated on the stream's
 * first GEMM (or {@link #prepare}) and retained until the stream closes ({@code Stream.onClose}).
 * Every cuBLASLt matmul and cuBLAS GEMM on the stream uses it, so GEMMs in flight on one stream
 * share one workspace (stream order serializes them) and a warm GEMM allocates nothing on the
 * device: it can be captured. Gatun's tracking keeps a workspace alive until the work that used
 * it completed, whatever closes first. {@link #setWorkspaceBytes} applies to the next GEMM of each
 * stream (its old workspace is closed then, safely).
 *
 * <p><b>Threads.</b> Usable from any thread. cuBLASLt's handle is safe for concurrent use (each
 * matmul names its stream and workspace), so matmuls on different streams run their host side in
 * parallel. A cuBLAS handle holds its stream and workspace as state ({@code cublasSetStream}), so
 * this context's one cuBLAS handle is serialized: each GEMM binds it (only when its stream or
 * workspace differs from the last GEMM's: {@link CublasBinding}) and calls under the handle's lock
 * (taken before the stream's lock, never under it); likewise cuDNN's (a leaf, taken under the
 * stream's lock).
 * One handle per stream would avoid the lock but {@code cublasDestroy} synchronizes the device,
 * which would then happen at every stream's close. Prepared operations ({@link Matmul},
 * {@link Gemm}, {@link Softmax}) are not thread-safe: prepare one per thread, as a
 * {@code KernelLaunch}.
 */
public final class Blas {

    private static final Logger LOG = LoggerFactory.getLogger(Blas.class);

    /** The workspace a stream gets unless {@link #setWorkspaceBytes} says otherwise: 32 MiB, what cuBLAS advises for Hopper. */
    public static final long DEFAULT_WORKSPACE_BYTES = 32L << 20;

    private static final class Native {
        static final BlasRuntime RUNTIME = new BlasRuntime(NativeBlasApi.INSTANCE);
    }

    /** A stream's workspace: its buffer, the view submissions list, and the address as a segment. */
    record Workspace(DeviceBuffer buffer, DeviceView view, MemorySegment address) {
        long bytes() {
            return buffer.byteSize();
        }
    }

    private final BlasRuntime runtime;
    private final CudaContext context;
    private final BlasCalls calls;
    private final MemorySegment lt;
    private final MemorySegment cublas;
    /** The cuBLAS handle's stream and workspace, and its lock (see the class comment). */
    final CublasBinding cublasBinding = new CublasBinding();
    /** The cuDNN handle's stream, and its lock. */
    final CudnnBinding cudnnBinding = new CudnnBinding();
    private volatile MemorySegment cudnn;
    private final ConcurrentHashMap<Stream, Workspace> workspaces = new ConcurrentHashMap<>();
    /** cuBLASLt's algorithm per shape and workspace size: the heuristic is asked once per key. */
    final ConcurrentHashMap<AlgorithmKey, MatmulAlgorithm> algorithms = new ConcurrentHashMap<>();
    /** The matmuls prepared here and not closed: closed with this BLAS, before its cuBLASLt handle. */
    private final Set<Matmul> openMatmuls = ConcurrentHashMap.newKeySet();
    private volatile long workspaceBytes = DEFAULT_WORKSPACE_BYTES;
    private volatile boolean closed;
    final LongAdder heuristicQueries = new LongAdder();
    final LongAdder matmuls = new LongAdder();
    final LongAdder softmaxes = new LongAdder();
    final LongAdder attentions = new LongAdder();

    /** The key of {@link #algorithms}. */
    record AlgorithmKey(GemmSpec spec, long workspaceBytes) {
    }

    Blas(BlasRuntime runtime, CudaContext context) {
        this.runtime = runtime;
        this.context = context;
        this.calls = runtime.calls();
        // Safety: handles bind to the thread's current context, made current right before each
        // create; nothing between can park. Each handle is destroyed once, at close.
        calls.makeCurrent(context.handle(), "cublasLtCreate");
        this.lt = calls.cublasLtCreate();
        MemorySegment created;
        try {
            calls.makeCurrent(context.handle(), "cublasCreate");
            created = calls.cublasCreate();
        } catch (RuntimeException e) {
            destroyQuietly("cublasLtDestroy", calls.cublasLtDestroy(lt));
            throw e;
        }
        this.cublas = created;
    }

    /**
     * The BLAS of {@code context}: made on first use (versions checked, handles created), then the
     * same until the context closes.
     *
     * @param context an open context
     * @return its BLAS
     * @throws CudaUnavailableException when cuBLASLt or cuBLAS cannot be loaded (every path tried),
     *     or is of another major version than 13
     * @throws BlasException when a handle cannot be created
     * @throws IllegalStateException when the context is closed
     */
    public static Blas of(CudaContext context) {
        Objects.requireNonNull(context, "context");
        return Native.RUNTIME.of(context);
    }

    /** The runtime over the installed libraries (for the doctor's section). */
    static BlasRuntime runtime() {
        return Native.RUNTIME;
    }

    /** Registers the close with the context's (after this instance won the race to be its one). */
    void closeWithContext() {
        try {
            context.computeStream().onClose(this::close);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** {@return the context} */
    public CudaContext context() {
        return context;
    }

    /** {@return the bytes of each stream's workspace} */
    public long workspaceBytes() {
        return workspaceBytes;
    }

    /**
     * Sets the bytes of each stream's workspace from the next GEMM on it (a stream whose workspace
     * has another size gets a new one then; the old one is freed once the work that used it
     * completed). An algorithm chosen for a larger workspace is not used with a smaller one:
     * prepare matmuls again after shrinking it.
     *
     * @param bytes 0 or more (0: cuBLAS and cuBLASLt use only algorithms that need none)
     */
    public void setWorkspaceBytes(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("the workspace cannot be negative: " + bytes);
        }
        workspaceBytes = bytes;
    }

    /**
     * Allocates {@code stream}'s workspace now, if it has none of the current size: call it
     * before capturing GEMMs on a stream that never ran one (an allocation inside a global-mode
     * capture is refused).
     *
     * @param stream a stream of this context
     */
    public void prepare(Stream stream) {
        workspace(stream);
    }

    /** {@return what this BLAS has done} */
    public BlasCounters counters() {
        long count = 0;
        long bytes = 0;
        for (Workspace w : workspaces.values()) {
            count++;
            bytes += w.bytes();
        }
        return new BlasCounters(count, bytes, heuristicQueries.sum(), matmuls.sum(), cublasBinding.gemms(), softmaxes.sum(),
                attentions.sum());
    }

    /**
     * Prepares a cuBLASLt matmul of {@code spec}: its descriptors, and its algorithm (the
     * heuristic's first choice for this shape and workspace size, asked once per shape for this
     * context: preparing the same spec again asks nothing).
     *
     * @param spec the GEMM; any epilogue
     * @return the prepared matmul, to close when done
     * @throws IllegalArgumentException when {@code spec} is invalid ({@link GemmSpec#validate()})
     * @throws BlasException when cuBLASLt has no algorithm for it ({@code CUBLAS_STATUS_NOT_SUPPORTED})
     */
    public Matmul matmul(GemmSpec spec) {
        GemmSpec valid = spec.validate();
        synchronized (this) { // prepared (the heuristic asked on the cuBLASLt handle) and listed, or refused, before a close
            checkOpen();
            Matmul m = new Matmul(this, valid);
            openMatmuls.add(m);
            return m;
        }
    }

    /** {@code m} closed: the close of this BLAS need not close it. */
    void closed(Matmul m) {
        openMatmuls.remove(m);
    }

    /**
     * Prepares a cuBLAS GEMM of {@code spec} ({@code cublasGemmEx}, or
     * {@code cublasGemmStridedBatchedEx} for a batch).
     *
     * @param spec the GEMM, without an epilogue (cuBLAS has none: use {@link #matmul})
     * @return the prepared GEMM
     * @throws IllegalArgumentException when {@code spec} is invalid or has an epilogue
     */
    public Gemm gemm(GemmSpec spec) {
        checkOpen();
        return new Gemm(this, spec.validate());
    }

    /**
     * Prepares a cuDNN softmax forward of {@code spec}; the first one creates this context's cuDNN
     * handle (cuDNN 9 is checked then: GEMMs do not need it).
     *
     * @param spec the tensor and the softmax
     * @return the prepared softmax, to close when done
     * @throws CudaUnavailableException when cuDNN cannot be loaded or is not cuDNN 9
     */
    public Softmax softmax(SoftmaxSpec spec) {
        checkOpen();
        runtime.cudnn().require();
        return new Softmax(this, spec.validate());
    }

    /**
     * Prepares cuDNN's scaled-dot-product attention forward of {@code spec} on the backend (graph)
     * API: the operation graph, the heuristic's engine configurations, and the first whose
     * execution plan cuDNN builds (which may compile kernels: prepare before capturing). The first
     * cuDNN operation creates this context's cuDNN handle.
     *
     * @param spec the shapes, type, scale and mask
     * @return the prepared attention, to close when done
     * @throws IllegalArgumentException when {@code spec} is invalid ({@link AttentionSpec#validate()})
     * @throws CudaUnavailableException when cuDNN cannot be loaded or is not cuDNN 9
     * @throws BlasException when no cuDNN engine runs the graph ({@code CUDNN_STATUS_NOT_SUPPORTED}
     *     or the status of the last engine tried, with cuDNN's detail and what to change)
     */
    public Attention attention(AttentionSpec spec) {
        checkOpen();
        spec.validate();
        runtime.cudnn().require();
        return new Attention(this, spec);
    }

    BlasCalls calls() {
        return calls;
    }

    MemorySegment ltHandle() {
        return lt;
    }

    MemorySegment cublasHandle() {
        return cublas;
    }

    MemorySegment cudnnHandle() {
        MemorySegment h = cudnn;
        if (h == null) {
            synchronized (cudnnBinding) {
                h = cudnn;
                if (h == null) {
                    checkOpen();
                    calls.makeCurrent(context.handle(), "cudnnCreate");
                    h = calls.cudnnCreate();
                    cudnn = h;
                }
            }
        }
        return h;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this Blas closed with its context (device " + context.device().ordinal()
                    + "); take Blas.of(context) of an open context");
        }
    }

    /**
     * {@code stream}'s workspace of the current size, allocated on first use. The warm path is one
     * map read: no allocation, no library call.
     */
    Workspace workspace(Stream stream) {
        if (stream.context() != context) {
            throw new IllegalArgumentException(stream + " belongs to another context than this Blas (device "
                    + context.device().ordinal() + "): take Blas.of(stream.context())");
        }
        Workspace w = workspaces.get(stream);
        long bytes = workspaceBytes;
        if (w != null && w.bytes() == bytes) {
            return w;
        }
        return newWorkspace(stream, bytes);
    }

    private synchronized Workspace newWorkspace(Stream stream, long bytes) {
        checkOpen();
        Workspace old = workspaces.get(stream);
        if (old != null && old.bytes() == bytes) {
            return old; // another thread made it meanwhile
        }
        DeviceBuffer buffer = context.allocate(Math.max(bytes, 0));
        Workspace w = new Workspace(buffer, buffer.bytes(), MemorySegment.ofAddress(buffer.address()));
        if (old == null) {
            try {
                // Retained until the stream closes; a stream closed meanwhile refuses, and keeps nothing.
                stream.onClose(() -> release(stream));
            } catch (RuntimeException e) {
                buffer.close();
                throw e;
            }
        }
        workspaces.put(stream, w);
        if (old != null) {
            cublasBinding.forget(old);
            old.buffer().close(); // freed once the work that used it completed (Gatun's retirement)
        }
        return w;
    }

    /** The stream closed: its workspace goes (freed once its work completed). */
    private synchronized void release(Stream stream) {
        Workspace w = workspaces.remove(stream);
        if (w != null) {
            cublasBinding.forget(w);
            w.buffer().close();
        }
        cudnnBinding.forget(stream);
    }

    /**
     * Closes this BLAS with its context: each workspace is closed (freed once the work that used
     * it completed) and the handles are destroyed. Runs as the context closes; idempotent.
     */
    void close() {
        List<Matmul> open;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            runtime.closed(this);
            for (Stream s : workspaces.keySet()) {
                release(s);
            }
            algorithms.clear();
            open = List.copyOf(openMatmuls);
        }
        // Out of this monitor, which a matmul's first run on a stream takes under the matmul's own
        // (to make the stream's workspace): each open matmul is closed, which waits for a run in
        // progress (its monitor), and a run that begins later sees this BLAS closed. So no
        // cublasLtMatmul is inside the cuBLASLt handle as it goes.
        open.forEach(Matmul::close);
        // Safety: each handle is destroyed once (the first close alone gets here), with its
        // context current. cublasDestroy and cudnnDestroy synchronize the device, which the
        // closing context is about to do anyway. The cuBLAS handle goes under its lock, where a
        // GEMM checks closed before it uses the handle: a GEMM that saw this BLAS open has
        // returned before the handle goes.
        synchronized (cublasBinding) {
            calls.makeCurrent(context.handle(), "cublasDestroy");
            destroyQuietly("cublasDestroy", calls.cublasDestroy(cublas));
        }
        calls.makeCurrent(context.handle(), "cublasLtDestroy");
        destroyQuietly("cublasLtDestroy", calls.cublasLtDestroy(lt));
        // Under the cuDNN handle's lock, where cudnnHandle() checks closed and makes the handle: one
        // made concurrently is either seen here or refused there (closed is set above), and no
        // softmax or attention is using the handle as it goes.
        synchronized (cudnnBinding) {
            MemorySegment dnn = cudnn;
            if (dnn != null) {
                calls.makeCurrent(context.handle(), "cudnnDestroy");
                destroyQuietly("cudnnDestroy", calls.cudnnDestroy(dnn));
            }
        }
    }

    private static void destroyQuietly(String operation, int status) {
        if (status != 0) {
            LOG.warn("{} failed with status {}; the handle is abandoned", operation, status);
        }
    }
}
