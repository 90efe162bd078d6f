package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The graph lifecycle of one (owner, slot): IDLE → CAPTURING → READY, where READY holds one or
 * more segments replayed in capture order. Capturing again on a READY slot appends a segment;
 * {@link #beginRecapture} re-captures one segment and updates its executable in place when the
 * topology is unchanged. {@link #abortCapture()} returns to the phase before the capture and
 * leaves nothing behind; {@link #reset()} drops every segment and is refused while capturing.
 *
 * <p>Replays take no lock and allocate nothing: they read one published immutable view. Mutations
 * (capture, reset, retirement) take this slot's lock, so captures on different slots run
 * concurrently with each other and with replays anywhere. A mutation that drops or updates an
 * executable first publishes a view no replay may launch from, then waits for the replays already
 * launching to return, and only then hands executables to {@link GraphRetirement} or updates one
 * in place: a replay racing a reset of the same slot either launches the old segments completely
 * or is refused, and never launches a retired executable.
 *
 * @param <S> the stream type
 */
public final class GraphSlot<S> {

    private static final Logger LOG = LoggerFactory.getLogger(GraphSlot.class);
    /** {@link #captureTarget} of a capture that appends a new segment. */
    private static final int APPEND = -1;
    private static final String INVALIDATION_HINT = ". If the capture was invalidated, a synchronizing call "
            + "probably ran during a global-mode capture: capture in thread-local mode or move that call out of it";

    private final GraphOwner<S> owner;
    private final String name;
    private final GraphBackend<S> backend;
    private final GraphRetirement retirement;
    private final ReentrantLock lock = new ReentrantLock();
    private final SlotCounters counters = new SlotCounters();
    /** Replays between entering their launch window and returning; see {@link #enterLaunch()}. */
    private final AtomicInteger launching = new AtomicInteger();
    private volatile SlotState state = SlotState.IDLE;
    // Guarded by lock; meaningful while the phase is CAPTURING.
    private S captureStream;
    private int captureTarget;

    GraphSlot(GraphOwner<S> owner, String name, GraphBackend<S> backend, GraphRetirement retirement) {
        this.owner = owner;
        this.name = name;
        this.backend = backend;
        this.retirement = retirement;
    }

    public String name() {
        return name;
    }

    public GraphOwner<S> owner() {
        return owner;
    }

    public SlotPhase phase() {
        return state.phase;
    }

    /** Installed segments; a capture in progress is not counted until it ends. */
    public int segmentCount() {
        return state.segments.length;
    }

    /** Whether the slot holds at least one instantiated executable. */
    public boolean hasExecutable() {
        return state.segments.length > 0;
    }

    public GraphCounts counts() {
        return counters.snapshot();
    }

    /**
     * Begins capturing a new segment on {@code stream}; {@link #endCapture()} appends it after the
     * segments already installed.
     *
     * @throws GraphStateException when a capture is already open or the owner is retired
     * @throws GraphCaptureException when the driver refuses to begin; the slot is unchanged
     */
    public void beginCapture(S stream, CaptureMode mode) {
        begin(stream, mode, APPEND);
    }

    /**
     * Begins re-capturing segment {@code index} on {@code stream}. {@link #endCapture()} then
     * updates that segment's executable in place when the new capture has the same topology, and
     * instantiates a new executable (retiring the old one) when it does not.
     *
     * @throws IndexOutOfBoundsException when the slot has no segment {@code index}
     * @throws GraphStateException when a capture is already open or the owner is retired
     * @throws GraphCaptureException when the driver refuses to begin; the slot is unchanged
     */
    public void beginRecapture(int index, S stream, CaptureMode mode) {
        begin(stream, mode, index);
    }

    private void begin(S stream, CaptureMode mode, int target) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(mode, "mode");
        lock.lock();
        try {
            SlotState current = state;
            requireSettled(current, "begin a capture");
            if (target != APPEND) {
                checkIndex(target, current.segments.length);
            }
            try {
                backend.beginCapture(stream, mode);
            } catch (RuntimeException e) {
                throw new GraphCaptureException(describe() + ": beginning the capture failed; the slot is unchanged",
                        e);
            }
            captureStream = stream;
            captureTarget = target;
            state = current.capturing();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Ends the open capture and installs it: appended as a new segment, or replacing the segment
     * being re-captured.
     *
     * @throws GraphStateException when no capture is open
     * @throws GraphCaptureException when the capture was invalidated or could not be instantiated,
     *     updated or uploaded; the slot is back to exactly what it held before the capture began
     */
    public void endCapture() {
        List<RetiredSegment> dropped;
        lock.lock();
        try {
            SlotState prior = requireCapturing("end a capture").settled();
            S stream = captureStream;
            captureStream = null;
            MemorySegment graph;
            try {
                graph = backend.endCapture(stream);
            } catch (RuntimeException e) {
                state = prior;
                throw installFailed("ending the capture", prior, e, INVALIDATION_HINT);
            }
            dropped = captureTarget == APPEND
                    ? append(prior, graph, stream)
                    : replace(prior, captureTarget, graph, stream);
            counters.add(SlotCounters.CAPTURES, 1);
        } finally {
            lock.unlock();
        }
        RetiredSegment.handAll(retirement, dropped);
    }

    private List<RetiredSegment> append(SlotState prior, MemorySegment graph, S stream) {
        MemorySegment exec = instantiate(prior, graph);
        upload(prior, graph, exec, stream);
        state = prior.appended(Segment.instantiated(graph, exec));
        return List.of();
    }

    private List<RetiredSegment> replace(SlotState prior, int index, MemorySegment graph, S stream) {
        Segment old = prior.segments[index];
        state = prior.updating();
        awaitLaunches();
        boolean updated;
        try {
            updated = backend.tryUpdate(old.exec(), graph);
        } catch (RuntimeException e) {
            state = prior;
            GraphCaptureException failure = installFailed("updating segment " + index + " in place", prior, e, "");
            discard(graph, failure);
            throw failure;
        }
        if (updated) {
            state = prior.replaced(index, old.updatedTo(graph));
            counters.add(SlotCounters.UPDATES_IN_PLACE, 1);
            if (!old.updated()) {
                return List.of(); // the replaced graph is the executable's origin: it stays (see Segment)
            }
            // Launches made before the update may still be running what the old graph baked in
            // (kernels, buffer addresses), so it is released through retirement as well.
            return List.of(new RetiredSegment(describe() + " segment " + index, backend, old.graph(),
                    MemorySegment.NULL));
        }
        MemorySegment exec = instantiate(prior, graph);
        upload(prior, graph, exec, stream);
        state = prior.replaced(index, Segment.instantiated(graph, exec));
        counters.add(SlotCounters.REINSTANTIATIONS, 1);
        return List.of(retired(index, old));
    }

    private MemorySegment instantiate(SlotState prior, MemorySegment graph) {
        try {
            return backend.instantiate(graph);
        } catch (RuntimeException e) {
            state = prior;
            GraphCaptureException failure = installFailed("instantiating the captured graph", prior, e, "");
            discard(graph, failure);
            throw failure;
        }
    }

    private void upload(SlotState prior, MemorySegment graph, MemorySegment exec, S stream) {
        try {
            backend.upload(exec, stream);
        } catch (RuntimeException e) {
            state = prior;
            GraphCaptureException failure = installFailed("uploading the new executable", prior, e, "");
            // A failed upload may still have reached the stream, so only retirement can tell when
            // the executable is unused; it is never destroyed here.
            handOverAfterFailure(new RetiredSegment(describe() + " failed capture", backend, graph, exec), failure);
            throw failure;
        }
    }

    /**
     * Abandons the open capture: the stream's capture is ended, whatever it recorded is destroyed,
     * and the slot returns to the phase and segments it had before the capture began. Safe on an
     * invalidated capture (the usual reason to abort); the driver's complaint about ending it is
     * logged, not thrown, since the slot is restored either way.
     *
     * @throws GraphStateException when no capture is open
     */
    public void abortCapture() {
        lock.lock();
        try {
            SlotState capturing = requireCapturing("abort a capture");
            S stream = captureStream;
            captureStream = null;
            state = capturing.settled();
            counters.add(SlotCounters.ABORTS, 1);
            MemorySegment partial;
            try {
                partial = backend.endCapture(stream);
            } catch (RuntimeException e) {
                LOG.warn("{}: ending the aborted capture failed (expected when it was invalidated); the slot is "
                        + "restored, but if its stream still reports a capture, end that capture before using the "
                        + "stream", describe(), e);
                return;
            }
            discard(partial, null);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Drops every segment and returns to IDLE; dropped executables go to retirement.
     *
     * @return whether an executable was dropped
     * @throws GraphStateException while a capture is open (end or abort it first) or after the
     *     owner was retired; nothing is dropped then
     */
    public boolean reset() {
        List<RetiredSegment> dropped;
        lock.lock();
        try {
            SlotState current = state;
            requireSettled(current, "reset");
            state = SlotState.IDLE;
            awaitLaunches();
            counters.add(SlotCounters.RESETS, 1);
            dropped = retiredAll(current);
        } finally {
            lock.unlock();
        }
        RetiredSegment.handAll(retirement, dropped);
        return !dropped.isEmpty();
    }

    /**
     * Runs {@code action} on segment {@code index}'s handles under this slot's lock, so that no
     * capture, reset or retirement replaces or destroys them meanwhile (replays may still run: an
     * in-place node update affects only launches made after it).
     */
    <T> T withSegment(int index, java.util.function.Function<Segment, T> action) {
        lock.lock();
        try {
            SlotState current = state;
            requireSettled(current, "update a node");
            if (index < 0 || index >= current.segments.length) {
                throw new IndexOutOfBoundsException(describe() + " has " + current.segments.length
                        + " segment(s); there is no segment " + index);
            }
            return action.apply(current.segments[index]);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Launches every segment on {@code stream}, in capture order. Takes no lock and allocates
     * nothing.
     *
     * @throws GraphStateException when the slot holds no segment, is being re-captured by
     *     another thread, or its owner is retired
     * @throws GraphReplayException when a launch fails; earlier segments were launched
     */
    public void replay(S stream) {
        Objects.requireNonNull(stream, "stream");
        Segment[] segments = enterLaunch();
        try {
            for (int i = 0; i < segments.length; i++) {
                launch(segments, i, stream);
            }
            counters.add(SlotCounters.REPLAYS, 1);
        } finally {
            launching.getAndDecrement();
        }
    }

    /**
     * Launches one segment, by capture-order index. Takes no lock and allocates nothing.
     *
     * @throws IndexOutOfBoundsException when there is no such segment (the message gives the count)
     * @throws GraphStateException as {@link #replay}
     * @throws GraphReplayException when the launch fails
     */
    public void replaySegment(int index, S stream) {
        Objects.requireNonNull(stream, "stream");
        Segment[] segments = enterLaunch();
        try {
            checkIndex(index, segments.length);
            launch(segments, index, stream);
            counters.add(SlotCounters.REPLAYS, 1);
        } finally {
            launching.getAndDecrement();
        }
    }

    /**
     * Enters the launch window and returns the segments to launch; the caller leaves it by
     * decrementing {@link #launching}. The view is read again after entering: a mutation publishes
     * an unlaunchable view before it waits for {@link #launching} to drain, so either it sees this
     * replay, or this replay sees its view and is refused. Refusals are checked once before
     * entering too, so that replays hammering a reset slot do not keep the count from draining.
     */
    private Segment[] enterLaunch() {
        SlotState view = state;
        if (!view.replayable()) {
            throw notReplayable(view);
        }
        launching.getAndIncrement();
        view = state;
        if (!view.replayable()) {
            launching.getAndDecrement();
            throw notReplayable(view);
        }
        return view.segments;
    }

    /** Waits until every replay that entered its launch window has returned. */
    private void awaitLaunches() {
        for (int attempt = 0; launching.get() != 0; attempt++) {
            Backoff.pause(attempt);
        }
    }

    private void launch(Segment[] segments, int index, S stream) {
        try {
            backend.launch(segments[index].exec(), stream);
        } catch (RuntimeException e) {
            throw new GraphReplayException(describe() + ": launching segment " + index + " of " + segments.length
                    + " failed; the " + index + " segment(s) before it were launched", index, e);
        }
        counters.add(SlotCounters.SEGMENT_LAUNCHES, 1);
    }

    // Retirement of the whole owner: GraphOwner holds every slot's lock across the check and the
    // retirement, so that no capture can open in between.

    ReentrantLock mutationLock() {
        return lock;
    }

    boolean capturingLocked() {
        return state.phase == SlotPhase.CAPTURING;
    }

    List<RetiredSegment> retireLocked() {
        SlotState current = state;
        state = SlotState.RETIRED;
        awaitLaunches();
        return retiredAll(current);
    }

    private List<RetiredSegment> retiredAll(SlotState view) {
        List<RetiredSegment> dropped = new ArrayList<>(view.segments.length);
        for (int i = 0; i < view.segments.length; i++) {
            dropped.add(retired(i, view.segments[i]));
        }
        return dropped;
    }

    private RetiredSegment retired(int index, Segment segment) {
        return RetiredSegment.whole(describe() + " segment " + index, backend, segment);
    }

    /** Destroys a graph that was never instantiated; if that fails, retirement retries it later. */
    private void discard(MemorySegment graph, RuntimeException primary) {
        RetiredSegment leftover = new RetiredSegment(describe() + " discarded capture", backend, graph,
                MemorySegment.NULL);
        try {
            leftover.destroy();
        } catch (RuntimeException e) {
            LOG.warn("{}: destroying a discarded capture's graph failed; handing it to retirement to retry",
                    describe(), e);
            handOverAfterFailure(leftover, primary);
        }
    }

    /** Hands a leftover to retirement on a failure path, without letting it mask the first error. */
    private void handOverAfterFailure(RetiredSegment leftover, RuntimeException primary) {
        try {
            retirement.retire(leftover);
        } catch (RuntimeException e) {
            if (primary == null) {
                throw e;
            }
            primary.addSuppressed(e);
        }
    }

    private SlotState requireCapturing(String action) {
        SlotState current = state;
        if (current.phase != SlotPhase.CAPTURING) {
            throw new GraphStateException(describe() + ": cannot " + action + ": no capture is open (phase "
                    + current.phase + "); begin one first", current.phase);
        }
        return current;
    }

    private void requireSettled(SlotState current, String action) {
        if (current.phase == SlotPhase.CAPTURING) {
            throw new GraphStateException(describe() + ": cannot " + action
                    + " while a capture is open; end or abort the capture first", current.phase);
        }
        if (current.phase == SlotPhase.RETIRED) {
            throw retiredError(action);
        }
    }

    private GraphStateException notReplayable(SlotState view) {
        if (view.phase == SlotPhase.RETIRED) {
            return retiredError("replay");
        }
        if (view.updating) {
            return new GraphStateException(describe() + ": cannot replay while another thread re-captures one of "
                    + "its segments; order replays of a slot after its re-capture", view.phase);
        }
        return new GraphStateException(describe() + ": cannot replay: nothing is captured; capture a segment first",
                view.phase);
    }

    private GraphStateException retiredError(String action) {
        return new GraphStateException(describe() + ": cannot " + action + ": the owner was retired",
                SlotPhase.RETIRED);
    }

    private GraphCaptureException installFailed(String step, SlotState prior, RuntimeException cause, String hint) {
        return new GraphCaptureException(describe() + ": " + step + " failed; the slot keeps its "
                + prior.segments.length + " earlier segment(s) and nothing of this capture stays in it" + hint, cause);
    }

    private void checkIndex(int index, int count) {
        if (index < 0 || index >= count) {
            throw new IndexOutOfBoundsException(describe() + ": no segment " + index + "; the slot holds " + count
                    + " segment(s), indexed from 0");
        }
    }

    private String describe() {
        return "owner '" + owner.name() + "' slot '" + name + "'";
    }

    @Override
    public String toString() {
        return "GraphSlot[" + describe() + ", " + state.phase + ", " + state.segments.length + " segment(s)]";
    }
}
