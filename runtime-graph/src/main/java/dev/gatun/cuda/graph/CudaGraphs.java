package dev.gatun.cuda.graph;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceView;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Graph lifecycles and a validation latch for one context, created and closed by the caller:
 * capture work queued on a stream into graphs kept per (group, slot), replay them, update them
 * in place, and validate them with the {@linkplain #latch() validation latch}, whose device word
 * this object owns.
 *
 * <pre>{@code
 * try (CudaGraphs graphs = CudaGraphs.create(ctx)) {
 *     GraphSlot decode = graphs.registerGroup("session-1").slot("decode");
 *     decode.beginCapture(stream, CaptureMode.GLOBAL);  // holds the context's capture gate
 *     kernel.launch(stream, config, args...);           // captured, not run
 *     decode.endCapture();
 *     decode.replay(stream);                            // per request: no lock, no allocation
 * }
 * }</pre>
 *
 * <p>A captured graph keeps alive every module whose kernels it holds and every buffer whose
 * address it baked in, until its last launch has completed, even if the module's registry name
 * was replaced or the buffer closed meanwhile. Close this object before the context.
 */
public final class CudaGraphs implements AutoCloseable {

    private final CudaContext context;
    private final GraphLifecycles lifecycles = new GraphLifecycles();
    private final DeviceLatchWord word;
    private final ValidationLatch latch;
    private volatile boolean closed;

    private CudaGraphs(CudaContext context) {
        this.context = context;
        this.word = new DeviceLatchWord(context);
        this.latch = new ValidationLatch(word);
    }

    /**
     * New graph lifecycles and a new validation latch (its 4-byte device word allocated now) for
     * {@code context}.
     *
     * @param context the context the graphs are captured and replayed in, and where the latch word
     *     is allocated; it must stay open until this object is closed
     * @return the new graphs, to be closed by the caller before {@code context}
     */
    public static CudaGraphs create(CudaContext context) {
        return new CudaGraphs(Objects.requireNonNull(context, "context"));
    }

    /** {@return the context whose graphs these lifecycles manage} */
    public CudaContext context() {
        return context;
    }

    /**
     * Registers a group of graph slots (for a session, a model, a request type).
     *
     * @param name the group's name, for messages and logs; two groups may share one
     * @return the new group, with no slots yet
     * @throws IllegalStateException when these graphs are closed
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public synchronized SlotGroup registerGroup(String name) {
        checkOpen();
        return lifecycles.registerGroup(name);
    }

    /** {@return the counters summed over every slot, retired groups included} */
    public GraphCounters counters() {
        return lifecycles.counters();
    }

    /** {@return the validation latch of these graphs, whose device word this object owns} */
    public ValidationLatch latch() {
        return latch;
    }

    /** {@return the latch's device word, to pass to kernels as their {@code unsigned int*} latch argument} */
    public DeviceView latchWord() {
        return word.view();
    }

    /**
     * {@return the directory holding {@code gatun_latch.cuh}, for
     * {@code CompileOptions.Builder.includeDirectory}}
     */
    public static Path latchIncludeDirectory() {
        return LatchHeader.includeDirectory();
    }

    /**
     * The directory holding {@code gatun_conditional.cuh} (device helpers for conditional graph
     * nodes, see {@link ConditionalHeader}), for {@code CompileOptions.Builder.includeDirectory}.
     *
     * @return the directory that holds {@code gatun_conditional.cuh}
     */
    public static Path conditionalIncludeDirectory() {
        return ConditionalHeader.includeDirectory();
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("these graphs of device " + context.device().ordinal() + " are closed; "
                    + "CudaGraphs.create makes new ones");
        }
    }

    /**
     * Retires every group registered here (their executables are destroyed after their last
     * launches) and frees the latch word. Idempotent.
     *
     * @throws IllegalStateException when a slot is capturing; nothing is closed then but the groups
     *     without an open capture (end or abort it, then close again)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        lifecycles.retireAll();
        closed = true;
        word.close();
    }
}
