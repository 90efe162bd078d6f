package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.Completions;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Evidence;
import dev.gatun.cuda.internal.context.ForeignHandles;
import dev.gatun.cuda.internal.context.HostCallback;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.graph.CaptureSession;
import dev.gatun.cuda.internal.memory.AllocationKind;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A CUDA stream: an ordered queue of GPU work. Non-blocking (it does not synchronize with the
 * legacy default stream). Every asynchronous operation in Gatun names the stream it runs on.
 *
 * <p>Asynchronous copies to and from the host go through memory Gatun owns, so that the JVM
 * never frees or moves bytes a DMA may still touch: a {@link PinnedBuffer} (fenced: its host
 * bytes are unusable until the transfer completes), or, for uploads of any host segment
 * including the Java heap, Gatun's own pinned staging (the source can be reused as soon as
 * the call returns).
 */
public final class Stream extends Owner {

    private static final Logger LOG = LoggerFactory.getLogger(Stream.class);

    private final CudaContext context;
    private final ContextState contextState;
    private final Resource resource;
    private final int priority;
    private final boolean contextOwned;
    private final StreamMemOps memOps;
    /** {@link #onClose} actions not yet run, guarded by the stream's lock. */
    private final List<Runnable> closeActions = new ArrayList<>(0);

    /**
     * The stream handle and its retirement: destroyed once its final fence completed, or, for
     * a borrowed stream, only forgotten then (its creator destroys it).
     */
    static final class Resource extends NativeResource {
        final StreamState stream;
        private final boolean borrowed;
        /** Recorded at close: the work queued before it is what the destroy waits for. */
        private Evidence finalFence;

        Resource(ContextState contextState, MemorySegment handle, boolean borrowed) {
            super(contextState, OwnerKind.STREAM);
            this.borrowed = borrowed;
            this.stream = new StreamState(contextState, handle);
        }

        @Override
        public boolean borrowed() {
            return borrowed;
        }

        /** Marks the stream closed and records its final fence (idempotent; under the stream's lock, or from the Cleaner). */
        void closeStream() {
            finalFence = stream.close();
        }

        @Override
        protected void beforeRetire() {
            closeStream(); // the fence recorded at close, or, for a stream the Cleaner reached, now
        }

        @Override
        protected List<Evidence> extraEvidence() {
            return List.of(finalFence);
        }

        @Override
        protected Retirement.Release howToFree() {
            if (borrowed) {
                // Gatun's work on it is complete (the final fence), and its creator destroys it:
                // only Gatun's view ends, so synchronous operations stop ordering after it.
                return Retirement.Release.withoutDriver(stream::markDrained);
            }
            MemorySegment handle = stream.handle();
            return () -> {
                // The stream's final fence completed, so no queued work remains and no Gatun
                // owner will submit to it again (it is marked closed). It is drained whether or
                // not the destroy succeeds: a destroy that keeps failing is given up, and its
                // final fence released, while synchronous operations would still order after it.
                stream.markDrained();
                return context.calls().streams().destroy(handle);
            };
        }

        @Override
        protected boolean synchronizingFree() {
            return !borrowed;
        }

        @Override
        public String identity() {
            return "Stream#" + stream.id() + " (device " + context.device() + (borrowed ? ", borrowed)" : ")");
        }
    }

    Stream(CudaContext context, int priority, boolean contextOwned) {
        this(context, context.state().calls().streams().create(priority), priority, contextOwned, false);
    }

    private Stream(CudaContext context, MemorySegment handle, int priority, boolean contextOwned, boolean borrowed) {
        ContextState contextState = context.state();
        Resource r = new Resource(contextState, handle, borrowed);
        super(r);
        this.context = context;
        this.contextState = contextState;
        this.priority = priority;
        this.contextOwned = contextOwned;
        this.resource = r;
        this.memOps = new StreamMemOps(this);
    }

    /**
     * Wraps a stream another library created in {@code context} (ONNX Runtime, cuBLAS, a native
     * engine) without taking it over. Gatun uses it like its own streams: its launches and
     * copies on it are fenced and tracked, buffers used on it are not freed before that work
     * completes, and every synchronous operation of the context orders after the work queued on
     * it, Gatun's or the other library's (its handle counts as exported from the start). Closing
     * the returned stream ends Gatun's view once the work queued before the close completed;
     * Gatun never destroys it. The other library must keep it alive until then.
     *
     * @param context the context the stream belongs to
     * @param foreignStream a {@code CUstream} from {@code cuStreamCreate*} in the device's
     *     primary context (checked with {@code cuStreamGetCtx})
     * @return Gatun's view of the stream, to close when Gatun no longer uses it
     * @throws IllegalArgumentException for the NULL, legacy or per-thread default stream, or a
     *     stream of another context
     * @throws CudaException when the driver rejects the handle
     */
    public static Stream borrow(CudaContext context, MemorySegment foreignStream) {
        Objects.requireNonNull(foreignStream, "foreignStream");
        context.checkOpen();
        ContextState state = context.state();
        int priority = ForeignHandles.checkStream(state, foreignStream);
        state.reap();
        Stream s = new Stream(context, foreignStream, priority, false, true);
        s.resource.stream.exported();
        return s;
    }

    /** {@return the context this stream belongs to} */
    public CudaContext context() {
        return context;
    }

    /** {@return this stream's priority: lower numbers mean higher priority} */
    public int priority() {
        return priority;
    }

    /**
     * {@return whether this is a view of another library's stream ({@link Stream#borrow}):
     * Gatun fences its own work on it but never destroys it}
     */
    public boolean isBorrowed() {
        return resource.borrowed;
    }

    /**
     * {@return the raw {@code CUstream}, for interop with other CUDA code} Valid while this stream is
     * open: Gatun destroys its own streams once closed and drained, so the other code must not
     * destroy it, nor use it after {@link #close()}. From this call on, every synchronous
     * operation of the context orders after the work queued on it, Gatun's or not.
     */
    public MemorySegment handle() {
        resource.checkOpen();
        resource.stream.exported(); // work queued through it is invisible to Gatun: order every synchronous operation after it
        return resource.stream.handle();
    }

    StreamState state() {
        return resource.stream;
    }

    /**
     * Checks that the stream is open; returns the stream contextState. Each driver call made with it
     * fails fast on a poisoned context itself, and needs no current context: calls that name a
     * stream act in the stream's context.
     */
    StreamState openState() {
        resource.checkOpen();
        return resource.stream;
    }

    /** {@return whether every operation queued so far has completed} Does not block. */
    public boolean query() {
        resource.checkOpen();
        return contextState.calls().streams().query(resource.stream.handle());
    }

    /**
     * Blocks until every operation queued so far has completed.
     *
     * @throws CaptureActiveException when the stream is capturing a graph: the driver would
     *     invalidate the capture (end or abort it first)
     */
    public void synchronize() {
        StreamState s = openState();
        if (s.captureScope() != null) {
            throw new CaptureActiveException(this + " is capturing a graph; synchronizing it would invalidate the "
                    + "capture. End or abort the capture first, then synchronize.");
        }
        contextState.stats().forcedSynchronizations.increment();
        contextState.calls().streams().synchronize(s.handle());
        contextState.reap();
    }

    /**
     * {@return a future completed once every operation queued on this stream so far has completed, on
     * {@link ForkJoinPool#commonPool()}; see {@link #onComplete(Executor)}}
     */
    public CompletableFuture<Void> onComplete() {
        return onComplete(ForkJoinPool.commonPool());
    }

    /**
     * A future completed once every operation queued on this stream so far has completed, without
     * blocking and without a thread per stream: a host function ({@code cuLaunchHostFunc}) queued
     * now records its firing, and Gatun's one dispatcher thread hands the future to
     * {@code executor}, which completes it (so {@code thenRun} and other non-async dependents
     * registered before completion run there; {@code Runnable::run} runs them on the dispatcher,
     * where they delay every other completion). No user code runs on the driver's thread.
     *
     * <p>Each call returns a new future that belongs to the caller. Cancelling or completing it
     * yourself detaches it: the GPU work is not cancelled, the host function still fires and is
     * ignored, and Gatun keeps nothing for it. When a sticky error poisons the context, every
     * pending future fails with that {@link ContextPoisonedException} (the driver calls no host
     * function after one; Gatun notices within about 100 ms even when no other call fails). When
     * the context closes, futures whose work completed complete, and any other fails.
     *
     * @param executor where the future is completed, and so where its non-async dependents run
     * @return a future completed once the work queued so far has completed
     * @throws CaptureActiveException when the stream is capturing a graph: the host function would
     *     become a node of the graph instead of observing this work (end or abort the capture first)
     * @throws ContextPoisonedException when the context is poisoned already
     */
    public CompletableFuture<Void> onComplete(Executor executor) {
        Objects.requireNonNull(executor, "executor");
        StreamState s = openState();
        synchronized (s.lock()) { // no capture can begin between the check and the host function's launch
            s.checkOpen();
            if (s.queuesIntoCapture()) {
                throw new CaptureActiveException(this + " is capturing a graph; a completion future would add a host "
                        + "node to the graph instead of observing the work. End or abort the capture first, or ask "
                        + "for the completion of a graph launch after it is queued.");
            }
            return Completions.after(s, executor, "Stream.onComplete");
        }
    }

    /**
     * Queues {@code callback} on this stream ({@code cuLaunchHostFunc}): once the work queued
     * before it has completed, the driver's own thread runs it, and the work queued after it waits
     * until it returns. On a stream that is capturing, it becomes a host node of the graph
     * instead, run at every launch (as {@link Graph#addHost}); the graph then holds it.
     *
     * <p>The same rules as a host node's apply: every Gatun call that would reach the driver from
     * inside the callback is refused before it is made ({@link CudaException},
     * {@code CUDA_ERROR_NOT_PERMITTED}: CUDA forbids CUDA calls in host functions), and what it
     * throws is logged, counted and kept for {@link ContextDiagnostics#takeHostCallbackFailures()}. To
     * learn only that work completed, {@link #onComplete()} runs no code on the driver's thread.
     *
     * @param callback what to run; it should return soon, since the driver's thread runs every
     *     host function of the process in turn
     * @throws IllegalStateException when this stream is closed
     * @throws ContextPoisonedException when the context is poisoned
     */
    public void launchHostFunction(Runnable callback) {
        Objects.requireNonNull(callback, "callback");
        StreamState s = openState();
        HostCallback held = new HostCallback(contextState, callback);
        try {
            synchronized (s.lock()) { // the capture check (in usedOn) and the launch, atomically
                s.checkOpen();
                held.usedOn(s); // a capture holds it for its graph; else its retirement waits for this stream
                contextState.calls().completions().launchHostFunction(s.handle(), held.token());
            }
        } finally {
            held.close(); // retired once nothing can run it: the stream passed it, or its graph is gone
        }
    }

    /**
     * Makes later work on this stream wait until {@code event}'s last record completes. Does not
     * block the host.
     *
     * <p>When that record went into a capture that Gatun began (on another stream), this stream
     * joins the capture: work queued on it from now on is captured too, and held by the capture
     * like the work of the stream that began it, until that capture ends. Join it back before
     * the end (the capturing stream waits on an event recorded here), as the driver requires.
     *
     * @param event an event of this stream's context
     * @throws IllegalStateException when this stream is capturing another graph, which the
     *     driver cannot merge with the event's
     */
    public void waitFor(Event event) {
        StreamState s = openState();
        context.checkSameDriver(event.context(), "the event"); // cross-device waits are legal
        if (event.context() != context) {
            contextState.captures().untracked(); // the wait may join a capture in the event's context
        }
        synchronized (s.lock()) {
            s.checkOpen();
            MemorySegment handle = event.handleForUse(s);
            joinCaptureOf(s, event.capturedIn());
            contextState.calls().streams().waitEvent(s.handle(), handle);
        }
    }

    /**
     * Before a wait on a point recorded in the Gatun capture {@code scope} (null: none), joins
     * that capture (under the stream's lock), or refuses a wait that would merge two captures.
     */
    private void joinCaptureOf(StreamState s, CaptureScope scope) {
        if (scope == null || !scope.isOpen()) {
            return; // not captured, or its capture is over (the driver says what such a wait means)
        }
        CaptureScope own = s.captureScope();
        if (own != null && own != scope) {
            throw new IllegalStateException(this + " is capturing another graph; a wait on a point of a different "
                    + "capture would merge the two. End one capture first, or wait on an event recorded outside it");
        }
        s.join(scope);
    }

    /**
     * Makes later work on this stream wait for the work that preceded {@code fence} on its
     * stream, without blocking the host. A fence is consumed by its first wait; a second wait
     * on it does nothing.
     *
     * @param fence a fence recorded on a stream of this stream's context
     */
    public void waitFor(Fence fence) {
        StreamState s = openState();
        synchronized (s.lock()) {
            s.checkOpen();
            joinCaptureOf(s, fence.capturedIn());
            fence.consumeInto(this, s);
        }
    }

    /**
     * Records a one-shot fence after the work queued so far, for another stream to
     * {@link #waitFor(Fence)}.
     *
     * @return the fence; the first wait on it consumes it
     */
    public Fence recordFence() {
        StreamState s = openState();
        synchronized (s.lock()) {
            s.checkOpen();
            return Fence.record(this, s);
        }
    }

    /**
     * Copies device to device, asynchronously. Both views must have the same byte length. The
     * views may live on different devices (a peer copy, {@code cuMemcpyPeerAsync}) when this
     * stream belongs to one of the two; the driver copies over the peer link when peer access
     * is enabled and stages through the host otherwise. Order it against the other device's
     * work with a {@link Fence} from that device's stream.
     *
     * @param destination where the bytes go
     * @param source where they come from
     */
    public void copy(DeviceView destination, DeviceView source) {
        StreamState s = openState();
        long bytes = Ranges.sameLength(destination.byteSize(), source.byteSize());
        CudaContext to = destination.buffer().context();
        CudaContext from = source.buffer().context();
        if (to != context || from != context) {
            copyPeer(s, destination, source, bytes, to, from);
            return;
        }
        synchronized (s.lock()) {
            s.checkOpen();
            destination.useOn(context, s);
            source.useOn(context, s);
            // Both ranges lie inside open allocations of this context (checked by the views), and
            // both allocations now list this stream, so neither is freed before the copy is done.
            try {
                contextState.calls().memory().copyOnDevice(destination.address(), source.address(), bytes, s.handle());
            } finally {
                s.submitted(); // a failed copy may have queued work too
            }
        }
        contextState.stats().deviceToDeviceCopies.increment();
        contextState.stats().deviceToDeviceBytes.add(bytes);
    }

    private void copyPeer(StreamState s, DeviceView destination, DeviceView source, long bytes, CudaContext to,
            CudaContext from) {
        if (to != context && from != context) {
            throw new IllegalArgumentException("a peer copy runs on a stream of the source's or the destination's "
                    + "device; this stream is device " + context.device().ordinal() + "'s, the copy is device "
                    + from.device().ordinal() + " -> " + to.device().ordinal() + ": queue it on a stream of device "
                    + from.device().ordinal() + " or " + to.device().ordinal());
        }
        synchronized (s.lock()) {
            s.checkOpen();
            destination.buffer().useOnPeer(context, s);
            source.buffer().useOnPeer(context, s);
            // Both ranges are checked and inside open allocations of their contexts, and both now
            // list this stream (so neither is freed before the copy completes).
            try {
                contextState.calls().memory().copyPeer(destination.address(), to.state().handle(), source.address(),
                        from.state().handle(), bytes, s.handle());
            } finally {
                s.submitted();
            }
        }
        contextState.stats().deviceToDeviceCopies.increment();
        contextState.stats().deviceToDeviceBytes.add(bytes);
    }

    /**
     * Copies {@code destination.byteSize()} bytes from {@code source} at {@code sourceOffset}
     * to the device, asynchronously. The pinned buffer's host bytes are unusable until the copy
     * completes (its segment waits for it). The host does not wait for an earlier transfer
     * through the buffer: the GPU runs this copy after it (see {@link PinnedBuffer}).
     *
     * @param destination where the bytes go on the device
     * @param source the pinned buffer they come from
     * @param sourceOffset where in {@code source} they start, in bytes
     */
    public void upload(DeviceView destination, PinnedBuffer source, long sourceOffset) {
        StreamState s = openState();
        source.uploadTo(this, s, destination, sourceOffset);
    }

    /**
     * Copies {@code source} from the device into {@code destination} at {@code destinationOffset},
     * asynchronously. The pinned buffer's host bytes are unusable until the copy completes. The
     * host does not wait for an earlier transfer through the buffer (an upload from it, say): the
     * GPU runs this copy after it (see {@link PinnedBuffer}).
     *
     * @param destination the pinned buffer the bytes go to
     * @param destinationOffset where in {@code destination} they go, in bytes
     * @param source where they come from on the device
     */
    public void download(PinnedBuffer destination, long destinationOffset, DeviceView source) {
        StreamState s = openState();
        destination.downloadFrom(this, s, destinationOffset, source);
    }

    /**
     * Copies any host segment (the Java heap included) to the device, asynchronously. The bytes
     * are first copied into Gatun's pinned staging, so {@code source} can be reused as soon as
     * this returns. {@code source.byteSize()} must equal {@code destination.byteSize()}.
     *
     * @param destination where the bytes go on the device
     * @param source the host bytes to copy
     * @throws CaptureActiveException when this stream is capturing a graph: the graph would copy
     *     from a staging block at every launch, which Gatun reuses for other uploads (upload from a
     *     {@link PinnedBuffer} in a capture)
     */
    public void upload(DeviceView destination, MemorySegment source) {
        StreamState s = openState();
        Ranges.sameLength(destination.byteSize(), source.byteSize());
        synchronized (s.lock()) {
            s.checkOpen();
            if (s.queuesIntoCapture()) {
                throw new CaptureActiveException(this + " is capturing a graph; a staged upload would become a copy "
                        + "node reading one of Gatun's staging blocks at every launch, and the block goes back to the "
                        + "pool for other uploads: a replay would copy whatever was staged there last. Upload from a "
                        + "PinnedBuffer inside the capture (the graph then holds it), or upload before the capture");
            }
            destination.useOn(context, s);
            context.staging().uploadAsync(s, destination.address(), source);
        }
    }

    /**
     * Sets every byte of {@code destination} to {@code value}, asynchronously.
     *
     * @param destination the bytes to set
     * @param value the byte every byte is set to
     */
    public void memset(DeviceView destination, byte value) {
        StreamState s = openState();
        synchronized (s.lock()) {
            s.checkOpen();
            destination.useOn(context, s);
            // The range lies inside an open allocation of this context that now lists this stream.
            try {
                contextState.calls().memory().setBytes(destination.address(), value, destination.byteSize(),
                        s.handle());
            } finally {
                s.submitted();
            }
        }
    }

    /**
     * Sets every 32-bit word of {@code destination} to {@code value} (e.g. a float's raw bits),
     * asynchronously. The view must start at a 4-byte aligned address and span whole words.
     *
     * @param destination the words to set
     * @param value the 32-bit pattern every word is set to
     */
    public void fill(DeviceView destination, int value) {
        StreamState s = openState();
        destination.checkWords("fill");
        synchronized (s.lock()) {
            s.checkOpen();
            destination.useOn(context, s);
            // An aligned range inside an open allocation of this context that now lists this stream.
            try {
                contextState.calls().memory().setWords(destination.address(), value, destination.byteSize() / 4,
                        s.handle());
            } finally {
                s.submitted();
            }
        }
    }

    /**
     * Lets another CUDA library (cuBLAS, cuDNN, a native engine's kernels) queue work on this
     * stream as one submission of Gatun's stream protocol, instead of through {@link #handle()},
     * which gives up Gatun's tracking. {@code work} is called once, on the calling thread, with
     * the raw {@code CUstream}, and the views in {@code used} are recorded as used by that work.
     * Allocates nothing: pass an array (or nothing) and a {@code work} made once to keep it so.
     *
     * <p>What it does around the call, as a kernel launch does around its downcall, all under the
     * stream's lock: the open check of the stream and of every view (and that each belongs to this
     * context); each view's buffer lists this stream among its uses, then reads whether it was
     * closed (the use/close Dekker pair of {@code NativeResource.usedOn}): of a submission and a
     * buffer's close that race, either the close sees this stream and fences it, under this lock,
     * after the work; or the submission sees the close and is refused before {@code work} runs;
     * when the stream is capturing, the capture holds each buffer for its graph (and a capture
     * begun with a list of buffers refuses any other); the poison check and the context made
     * current on this thread (libraries over the runtime API launch into the current context);
     * {@code work}; and, whatever it threw, the stream marked as having unordered work, so every
     * later synchronous operation of the context orders after it. A stream's close takes the same
     * lock: a submission racing it is refused, or lands before the final fence and is covered.
     *
     * <p>Safety: Gatun can only order and keep alive what it is told about. {@code work} must
     * <ul>
     * <li>touch only device memory inside the views in {@code used}, or memory its library
     *     owns (a handle's internal state, a workspace it was given among {@code used}): any other
     *     Gatun buffer may be freed while the work still runs;</li>
     * <li>queue work only on the stream it is given, and not keep that handle past the call;</li>
     * <li>make no synchronizing call (allocation or free, module load, a device or stream
     *     synchronize): while another thread captures a graph in global mode, the driver
     *     invalidates that capture, and the stream's lock is held; a library that allocates a
     *     workspace on its first call must be given one, or warmed outside captures;</li>
     * <li>call no Gatun operation: not on this stream (the lock is reentrant: it would not wait,
     *     and would break the atomicity above), nor on its context (another stream's lock, or the
     *     counters' read at a safe point such as {@link CudaContext#reap()}, taken under this
     *     stream's lock can deadlock with a thread that takes them in their order), and not park
     *     between receiving the handle and its
     *     library calls (a virtual thread that parks may resume on another carrier, where the
     *     context is not current);</li>
     * <li>report its failure by throwing: a library error does not poison the context (a sticky
     *     CUDA error behind it is seen by Gatun's next driver call, which poisons).</li>
     * </ul>
     * A failed {@code work} may still have queued some of its work: the views stay listed, so
     * none of their buffers is freed before the stream passes that point.
     *
     * @param work what the other library queues, given the raw stream
     * @param used every device view the work reads or writes (Gatun's tracking does not tell
     *     reads from writes: every use keeps the buffer alive and is ordered the same way)
     * @throws IllegalStateException when this stream, or a view's buffer, is closed (before
     *     {@code work} runs); when the stream is capturing with a list of buffers that lacks one
     * @throws IllegalArgumentException when a view belongs to another context
     * @throws ContextPoisonedException when the context is poisoned (before {@code work} runs)
     * @throws NullPointerException when {@code work}, {@code used} or one of its views is null
     *     (before anything is recorded)
     */
    public void submitForeign(ForeignWork work, DeviceView... used) {
        Objects.requireNonNull(work, "work");
        for (DeviceView v : used) { // every argument checked before any use is recorded
            Objects.requireNonNull(v, "a view in used");
        }
        StreamState s = openState();
        synchronized (s.lock()) { // admitted and queued with no capture beginning or ending, nor the close, between
            s.checkOpen();
            for (DeviceView v : used) {
                v.useOn(context, s); // lists this stream, then reads the close; a capture holds it
            }
            contextState.calls().foreign().currentForForeignWork();
            try {
                // Every view's buffer is open and lists this stream, so none is freed before the
                // stream passes this work; the stream is open, of this context, which is current.
                work.queue(s.handle());
            } finally {
                s.submitted(); // even when it failed: it may have queued some work
            }
        }
    }

    /**
     * Runs {@code action} once, after this stream is closed (its final fence recorded: work queued
     * before the close still runs, and Gatun owners used on it are freed only after it), on the
     * thread that closes it. For what another library keeps per stream: a workspace buffer, a
     * handle bound to it. A context's own streams ({@link CudaContext#computeStream()}, copy
     * stream) run theirs when their context's {@link CudaContext#close()} begins, before it checks
     * for open owners, so buffers the actions close do not keep it open. What an action throws is
     * logged and does not stop the close nor the other actions.
     *
     * @param action what to run; it may close owners of this context, and must not queue work on
     *     this stream (it is closed)
     * @throws IllegalStateException when this stream is closed already (the action is not kept)
     */
    public void onClose(Runnable action) {
        Objects.requireNonNull(action, "action");
        StreamState s = openState();
        synchronized (s.lock()) { // registered before the close (which runs it) or refused: never lost
            s.checkOpen();
            closeActions.add(action);
        }
    }

    /** Runs and forgets the close actions registered so far (after the close, or as the context closes). */
    void runCloseActions() {
        List<Runnable> actions;
        synchronized (resource.stream.lock()) {
            actions = List.copyOf(closeActions);
            closeActions.clear();
        }
        for (Runnable action : actions) {
            try {
                action.run();
            } catch (RuntimeException | Error e) {
                LOG.warn("a close action of {} failed; the close goes on", this, e);
            }
        }
    }

    /**
     * {@return this stream's memory operations: stream-ordered writes of a 32/64-bit word and
     * waits on one ({@code cuStreamWriteValue*}, {@code cuStreamWaitValue*}, {@code cuStreamBatchMemOp})}
     */
    public StreamMemOps memOps() {
        return memOps;
    }

    /**
     * Allocates device memory in stream order ({@code cuMemAllocAsync}): usable by work queued
     * on this stream after this call (other streams must wait on a fence first). When closed,
     * it is freed in stream order on the last stream that used it.
     *
     * <p>While a Gatun capture is open on this stream ({@link #beginCapture}), the allocation is
     * a {@linkplain DeviceBuffer#isGraphAllocation() graph allocation}: an allocation node of the
     * captured graph, at an address fixed for the graph's life. Its memory exists only when the
     * graph runs: use it in the capture, close it there to record a free node, or leave it open
     * to make it the graph's ({@link Graph#allocations()}), usable after each launch. Synchronous
     * host copies of it are refused until an executable of its graph has launched.
     *
     * @param bytes how many bytes to allocate; 0 or more
     * @return the new buffer, to close when done
     */
    public DeviceBuffer allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate a negative size: " + bytes);
        }
        StreamState s = openState();
        try {
            return allocateOnce(s, bytes);
        } catch (CudaException e) {
            if (CaptureSession.begunOn(s) != null) {
                throw e; // an allocation node: its memory comes at the graph's launch, where the driver decides
            }
            // Out of the stream's lock: the ladder retires and synchronizes, then the whole
            // locked allocation (its classification included) runs again.
            return context.ladder().retry(e, AllocationKind.STREAM_ORDERED, bytes, () -> allocateOnce(s, bytes));
        }
    }

    private DeviceBuffer allocateOnce(StreamState s, long bytes) {
        synchronized (s.lock()) { // the allocation is classified and made with no capture beginning or ending between
            s.checkOpen();
            if (bytes == 0) {
                return DeviceBuffer.allocateAsync(context, s, 0);
            }
            CaptureSession capture = CaptureSession.begunOn(s); // the open capture begun on this stream, if any
            if (capture != null) {
                return DeviceBuffer.allocateInCapture(capture, bytes);
            }
            if (s.queuesIntoCapture()) { // a joined capture, or one begun through the raw handle
                // The driver would record an allocation node in a graph Gatun does not own, whose
                // address exists only while that graph runs: Gatun could neither order nor free it.
                throw new CaptureActiveException(this + " is capturing a graph, but not in a capture Gatun began on "
                        + "it: it joined another stream's capture (it waited for work queued in it) or another library "
                        + "began the capture. Allocate on the stream the capture was begun on (Stream.beginCapture), "
                        + "or before the capture");
            }
            return DeviceBuffer.allocateAsync(context, s, bytes);
        }
    }

    /**
     * Begins capturing this stream into a graph: work queued on it from now on is recorded, not
     * run, until {@link StreamCapture#end()}. A {@linkplain CaptureMode#GLOBAL global-mode}
     * capture holds the context's capture gate while it lasts.
     *
     * @param mode the driver's capture mode, which decides what other threads may do while it lasts
     * @return the capture, to end or abort
     * @throws CaptureActiveException when a global-mode capture cannot enter the gate in time
     * @throws IllegalStateException when this stream is closed or already capturing, or when a
     *     global or thread-local capture would begin on a virtual thread (see {@link CaptureMode})
     */
    public StreamCapture beginCapture(CaptureMode mode) {
        return StreamCapture.begin(this, mode, null);
    }

    /**
     * Begins a capture that may use only the device buffers in {@code only}: work using another
     * buffer is refused with an {@link IllegalStateException} before it is queued, so no
     * address the caller did not plan for is baked into the graph. Otherwise as
     * {@link #beginCapture(CaptureMode)}.
     *
     * @param mode the driver's capture mode
     * @param only the device buffers the captured work may use
     * @return the capture, to end or abort
     */
    public StreamCapture beginCapture(CaptureMode mode, Collection<? extends DeviceBuffer> only) {
        return StreamCapture.begin(this, mode, Objects.requireNonNull(only, "only"));
    }

    /**
     * Closes the stream: no more work can be queued; the stream is destroyed once the work
     * already queued has completed. Closing a context's own compute or copy stream does nothing.
     * A {@linkplain #isBorrowed() borrowed} stream is never destroyed: once the work queued
     * before the close has completed, Gatun only forgets it.
     */
    @Override
    public void close() {
        if (contextOwned) {
            return;
        }
        closeResource();
    }

    /** Retires a context-owned stream at context shutdown. */
    void retire() {
        closeResource();
    }

    private void closeResource() {
        if (resource.isClosed()) {
            return;
        }
        StreamState s = resource.stream;
        synchronized (s.lock()) {
            // On a poisoned context the capture query fails too, and nothing can be captured any
            // more: the handle is abandoned by retirement instead.
            if (!s.closed() && !contextState.poisoned() && s.queuesIntoCapture()) {
                throw new IllegalStateException(resource.identity() + " is capturing; end or abort the capture first");
            }
            // Closed under the same lock as the check: no capture can begin, and no work be queued,
            // between the check and the final fence.
            resource.closeStream();
        }
        super.close();
        runCloseActions();
    }

    @Override
    public String toString() {
        return resource.identity() + (contextOwned ? " [context-owned]" : "");
    }
}
