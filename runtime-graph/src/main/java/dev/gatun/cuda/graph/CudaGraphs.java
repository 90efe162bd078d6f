package dev.gatun.cuda.graph;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.internal.context.Internals;
import dev.gatun.cuda.Stream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * CUDA graphs for one context ({@link #of(CudaContext)}): capture work queued on a stream into
 * graphs kept per (owner, slot), replay them, update them in place, and validate them with the
 * context's {@linkplain #latch() validation latch}.
 *
 * <pre>{@code
 * CudaGraphs graphs = CudaGraphs.of(ctx);
 * GraphSlot<Stream> decode = graphs.registerOwner("session-1").slot("decode");
 * graphs.register(stream, weights, activations);      // optional: only these buffers may be baked in
 * decode.beginCapture(stream, CaptureMode.GLOBAL);     // holds the context's capture gate
 * kernel.launch(stream, config, args...);              // captured, not run
 * decode.endCapture();
 * decode.replay(stream);                               // per request: no lock, no allocation
 * }</pre>
 *
 * <p>A captured graph keeps alive every module whose kernels it holds and every buffer whose
 * address it baked in, until its last launch has completed, even if the module's registry name
 * was replaced or the buffer closed meanwhile. Close this object before the context.
 */
public final class CudaGraphs implements AutoCloseable {

    private static final Map<CudaContext, CudaGraphs> BY_CONTEXT = new ConcurrentHashMap<>();

    private final CudaContext context;
    private final CudaGraphBackend backend;
    private final GraphLifecycles<Stream> lifecycles;
    private final DeviceLatchWord word;
    private final ValidationLatch latch;
    private final List<GraphOwner<Stream>> owners = new ArrayList<>();
    private volatile boolean closed;

    private CudaGraphs(CudaContext context) {
        this.context = context;
        this.backend = new CudaGraphBackend(context);
        this.lifecycles = new GraphLifecycles<>(backend, backend::retire);
        this.word = new DeviceLatchWord(context);
        this.latch = new ValidationLatch(word);
    }

    /** The graphs of {@code context}, created on first use. */
    public static CudaGraphs of(CudaContext context) {
        return BY_CONTEXT.compute(context, (c, existing) -> existing == null || existing.closed ? new CudaGraphs(c) : existing);
    }

    public CudaContext context() {
        return context;
    }

    /** Registers an owner of graph slots (a session, a model, a request type). */
    public GraphOwner<Stream> registerOwner(String name) {
        checkOpen();
        GraphOwner<Stream> owner = lifecycles.registerOwner(name);
        synchronized (owners) {
            owners.add(owner);
        }
        return owner;
    }

    /**
     * Registers the buffers the next capture on {@code stream} may use: during that capture,
     * work that uses any other device buffer is refused with {@link UnregisteredBufferException}
     * before it is queued. Without a registration every buffer is admitted (and held).
     */
    public void register(Stream stream, DeviceBuffer... buffers) {
        checkOpen();
        backend.register(stream, buffers);
    }

    /**
     * Updates, in place, the arguments of one kernel node of a captured segment: the
     * {@code occurrence}-th (0-based) launch of {@code kernel} in segment {@code segment} of
     * {@code slot} takes {@code arguments}' argument values from its next launch on (launches
     * already queued are not affected). The executable holds the buffers the new arguments name.
     * No re-capture, no re-instantiation. Works the same after any number of in-place updates
     * of the segment (same-shape re-captures): the node is found in the graph last captured, and
     * keeps that capture's grid, block and shared memory.
     *
     * @param arguments a launch of the same kernel prepared with the new arguments
     * @throws IllegalArgumentException when the segment has no such node, or {@code arguments}
     *     launches another kernel
     */
    public void updateKernelArguments(GraphSlot<Stream> slot, int segment, Kernel kernel, int occurrence,
            KernelLaunch arguments) {
        checkOpen();
        if (arguments.kernel() != kernel && !arguments.kernel().name().equals(kernel.name())) {
            throw new IllegalArgumentException("the arguments were prepared for kernel '" + arguments.kernel().name()
                    + "', not '" + kernel.name() + "'");
        }
        Internals.Bridge internals = Internals.get();
        slot.withSegment(segment, handles -> {
            backend.updateKernelNode(handles, internals.function(kernel), occurrence, internals.kernelParams(arguments),
                    internals.argumentOwners(arguments), kernel.name());
            return null;
        });
    }

    /** Counts over every slot, retired owners included. */
    public GraphCounts totals() {
        return lifecycles.totals();
    }

    /** The context's validation latch. */
    public ValidationLatch latch() {
        return latch;
    }

    /** The latch's device word, to pass to kernels as their {@code unsigned int*} latch argument. */
    public DeviceView latchWord() {
        return word.view();
    }

    /** The directory holding {@code gatun_latch.cuh}, for {@code CompileOptions.Builder.includeDirectory}. */
    public static Path latchIncludeDirectory() {
        return LatchHeader.includeDirectory();
    }

    /** Executables alive now (including those waiting for their last launch to complete). */
    public int liveExecutables() {
        return backend.liveExecutables();
    }

    /** Graphs alive now. */
    public int liveGraphs() {
        return backend.liveGraphs();
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the graphs of device " + context.device().ordinal() + " are closed");
        }
    }

    /** Retires every owner registered here (their executables after their last launches) and frees the latch word. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<GraphOwner<Stream>> all;
        synchronized (owners) {
            all = List.copyOf(owners);
            owners.clear();
        }
        for (GraphOwner<Stream> owner : all) {
            owner.retire();
        }
        word.close();
        BY_CONTEXT.remove(context, this);
    }
}
