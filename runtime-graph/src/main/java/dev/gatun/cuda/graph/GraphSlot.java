package dev.gatun.cuda.graph;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureArena;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphInstaller;
import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.UpdatingExecutable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The graph lifecycle of one (group, slot): IDLE → CAPTURING → READY, where READY holds one or
 * more segments replayed in capture order. Capturing again on a READY slot appends a segment;
 * {@link #beginRecapture} re-captures one segment and updates its executable in place when the
 * topology is unchanged; otherwise it updates the slot's spare executable, or instantiates anew
 * ({@link GraphInstaller}: at most one spare per slot, so a segment whose shape alternates between
 * two settles into updates). {@link #abortCapture()} returns to the phase before the capture and
 * leaves nothing behind; {@link #reset()} drops every segment and is refused while capturing.
 *
 * <p>Each segment is a {@link GraphExec}, which keeps what it needs of its graphs; the slot closes
 * every graph as soon as it is installed, and closes an executable when it drops it, which hands
 * it to the context's retirement queue: it is destroyed once its last launch has completed.
 *
 * <p>Replays take no slot lock and allocate nothing: they read one published immutable view (each
 * launch takes only its stream's and its executable's monitors, see {@link GraphExec}). Mutations
 * (capture, reset, retirement) take this slot's lock, so captures on different slots run
 * concurrently with each other and with replays anywhere. A mutation that drops or updates an
 * executable first publishes a view no replay may launch from, then waits for the replays already
 * launching to return, and only then closes executables or updates one in place: a replay racing
 * a reset of the same slot either launches the old segments completely or is refused, and never
 * launches a closed executable.
 */
public final class GraphSlot {

    private static final Logger LOG = LoggerFactory.getLogger(GraphSlot.class);
    /** {@link #captureTarget} of a capture that appends a new segment. */
    private static final int APPEND = -1;

    private final SlotGroup group;
    private final String name;
    private final ReentrantLock lock = new ReentrantLock();
    private final SlotCounters counters = new SlotCounters();
    /** The update-or-instantiate step of re-captures, and the slot's one spare executable. */
    private final GraphInstaller installer = new GraphInstaller();
    /** Replays between entering their launch window and returning; see {@link #enterLaunch()}. */
    private final AtomicInteger launching = new AtomicInteger();
    private volatile SlotState state = SlotState.IDLE;
    // Guarded by lock; meaningful while the phase is CAPTURING.
    private StreamCapture capture;
    private int captureTarget;

    GraphSlot(SlotGroup group, String name) {
        this.group = group;
        this.name = name;
    }

    /** {@return the slot's name, unique in its group} */
    public String name() {
        return name;
    }

    /** {@return the group that owns this slot and retires it with the others} */
    public SlotGroup group() {
        return group;
    }

    /** {@return where the slot is in its lifecycle now (idle, capturing, ready, ...)} */
    public SlotPhase phase() {
        return state.phase;
    }

    /** {@return how many segments are installed}; a capture in progress is not counted until it ends. */
    public int segmentCount() {
        return state.segments.length;
    }

    /** {@return whether the slot holds at least one instantiated executable} */
    public boolean hasExecutable() {
        return state.segments.length > 0;
    }

    /** {@return a snapshot of this slot's counters: captures, replays, segment launches, updates, ...} */
    public GraphCounters counters() {
        // The segment launches are read after the replays: a replay counted there has launched, and
        // its launches are in the view read then or in a later one's count.
        return counters.snapshot(() -> state.segmentLaunches(), installer.counters());
    }

    /**
     * {@return why re-captures of this slot's segments could not update their executables in
     * place, each reason with how often (the driver's, such as
     * {@link GraphUpdateResult#TOPOLOGY_CHANGED}, or {@link GraphUpdateResult#MEMORY_NODES});
     * each such re-capture updated the spare, or was instantiated anew, as counted in
     * {@link #counters()}} A shape that keeps changing among more than two here costs an
     * instantiation per capture: give each shape a slot of its own.
     */
    public Map<GraphUpdateResult, Long> updateRefusals() {
        return installer.counters().refusals();
    }

    /**
     * {@return why the spare executable refused re-captures that its segment's executable had
     * refused, each reason with how often; each was instantiated anew}
     */
    public Map<GraphUpdateResult, Long> spareUpdateRefusals() {
        return installer.counters().spareRefusals();
    }

    /**
     * {@return whether the slot keeps a spare executable now} A re-capture that its segment's
     * executable refuses leaves that executable as the spare (closing the one before), unless it
     * was refused for {@link GraphUpdateResult#MEMORY_NODES}; reset and retirement close it.
     */
    public boolean hasSpare() {
        return installer.hasSpare();
    }

    /**
     * Begins capturing a new segment on {@code stream}; {@link #endCapture()} appends it after the
     * segments already installed.
     *
     * @param stream the stream whose work is captured; the new segment belongs to its context
     * @param mode the driver's capture mode, which decides what other threads may do meanwhile
     * @throws IllegalStateException when a capture is already open or the group is retired
     * @throws CaptureActiveException when a global-mode capture cannot enter the context's gate in
     *     time; the slot is unchanged
     * @throws CudaException when the driver cannot begin the capture; the slot is unchanged
     */
    public void beginCapture(Stream stream, CaptureMode mode) {
        begin(stream, mode, null, APPEND);
    }

    /**
     * As {@link #beginCapture(Stream, CaptureMode)}, for a capture that may use only the device
     * buffers in {@code only} (see {@link Stream#beginCapture(CaptureMode, Collection)}).
     *
     * @param stream the stream whose work is captured
     * @param mode the driver's capture mode
     * @param only the device buffers the captured work may use
     */
    public void beginCapture(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only) {
        begin(stream, mode, Objects.requireNonNull(only, "only"), APPEND);
    }

    /**
     * Begins re-capturing segment {@code index} on {@code stream}. {@link #endCapture()} then
     * updates that segment's executable in place when the new capture has the same topology;
     * when it does not, it updates the slot's spare executable and puts it in the segment's place,
     * or where the spare refuses too (or there is none) instantiates a new executable; either way
     * the old executable becomes the spare, and the spare before it is closed.
     *
     * @param index the segment to replace, by capture-order index
     * @param stream the stream whose work is captured
     * @param mode the driver's capture mode
     * @throws IndexOutOfBoundsException when the slot has no segment {@code index}
     * @throws IllegalStateException when a capture is already open or the group is retired
     * @throws CaptureActiveException as {@link #beginCapture(Stream, CaptureMode)}
     * @throws CudaException when the driver cannot begin the capture; the slot is unchanged
     */
    public void beginRecapture(int index, Stream stream, CaptureMode mode) {
        begin(stream, mode, null, index);
    }

    /**
     * As {@link #beginCapture(Stream, CaptureMode)}, with {@link Stream#allocate} taking
     * {@code arena}'s memory instead of making memory nodes ({@link CaptureArena#beginCapture}):
     * re-captures of the same shape get the same addresses and update the segment in place.
     *
     * @param stream the stream whose work is captured
     * @param mode the driver's capture mode
     * @param arena the arena the capture allocates from, of the stream's context
     */
    public void beginCapture(Stream stream, CaptureMode mode, CaptureArena arena) {
        begin(stream, mode, null, APPEND, Objects.requireNonNull(arena, "arena"));
    }

    /**
     * As {@link #beginRecapture(int, Stream, CaptureMode)}, allocating from {@code arena} (see
     * {@link #beginCapture(Stream, CaptureMode, CaptureArena)}). A segment captured into another
     * arena, or into none, is instantiated anew ({@link GraphUpdateResult#ARENA_CHANGED}).
     *
     * @param index the segment to replace, by capture-order index
     * @param stream the stream whose work is captured
     * @param mode the driver's capture mode
     * @param arena the arena the capture allocates from
     */
    public void beginRecapture(int index, Stream stream, CaptureMode mode, CaptureArena arena) {
        begin(stream, mode, null, index, Objects.requireNonNull(arena, "arena"));
    }

    /**
     * As {@link #beginRecapture(int, Stream, CaptureMode)}, using only the device buffers in {@code only}.
     *
     * @param index the segment to replace, by capture-order index
     * @param stream the stream whose work is captured
     * @param mode the driver's capture mode
     * @param only the device buffers the captured work may use
     */
    public void beginRecapture(int index, Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only) {
        begin(stream, mode, Objects.requireNonNull(only, "only"), index);
    }

    private void begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only, int target) {
        begin(stream, mode, only, target, null);
    }

    private void begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only, int target,
            CaptureArena arena) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(mode, "mode");
        lock.lock();
        try {
            SlotState current = state;
            requireSettled(current, "begin a capture");
            if (target != APPEND) {
                checkIndex(target, current.segments.length);
            }
            capture = arena != null ? arena.beginCapture(stream, mode)
                    : only == null ? stream.beginCapture(mode) : stream.beginCapture(mode, only);
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
     * @throws IllegalStateException when no capture is open
     * @throws CaptureInvalidatedException when the capture was invalidated; the slot is back to
     *     exactly what it held before the capture began
     * @throws CudaException when the capture could not be ended, instantiated, updated or
     *     uploaded; the slot is back to exactly what it held before the capture began
     */
    public void endCapture() {
        List<GraphExec> dropped;
        lock.lock();
        try {
            SlotState prior = requireCapturing("end a capture").settled();
            StreamCapture ending = capture;
            capture = null;
            Graph graph;
            try {
                graph = ending.end();
            } catch (RuntimeException e) {
                state = prior;
                throw e;
            }
            try (graph) { // an executable keeps what it needs of the graph
                dropped = captureTarget == APPEND
                        ? append(prior, graph, ending.stream())
                        : replace(prior, captureTarget, graph, ending.stream());
            }
            counters.add(SlotCounters.CAPTURES, 1);
        } finally {
            lock.unlock();
        }
        closeAll(dropped);
    }

    private List<GraphExec> append(SlotState prior, Graph graph, Stream stream) {
        GraphExec exec = instantiate(prior, graph);
        upload(prior, exec, stream);
        state = prior.appended(exec);
        return List.of();
    }

    private List<GraphExec> replace(SlotState prior, int index, Graph graph, Stream stream) {
        GraphExec old = prior.segments[index];
        state = prior.updating();
        awaitLaunches(); // no replay launches old from here on: it may be updated, or become the spare
        GraphInstaller.Result installed;
        try {
            installed = installer.install(old, graph, made -> made.upload(stream));
        } catch (RuntimeException e) {
            state = prior;
            throw e;
        }
        if (installed.path() != UpdatingExecutable.Path.UPDATED) {
            LOG.debug("{}: segment {} {}, since the update in place was refused: {}", describe(), index,
                    installed.path() == UpdatingExecutable.Path.SPARE ? "took the updated spare" : "re-instantiated",
                    installed.refusal());
        }
        state = installed.current() == old ? prior : prior.replaced(index, installed.current());
        return installed.dropped();
    }

    private GraphExec instantiate(SlotState prior, Graph graph) {
        try {
            return graph.instantiate();
        } catch (RuntimeException e) {
            state = prior;
            throw e;
        }
    }

    private void upload(SlotState prior, GraphExec exec, Stream stream) {
        try {
            exec.upload(stream);
        } catch (RuntimeException e) {
            state = prior;
            // A failed upload may still have reached the stream: closing waits for its fence.
            try {
                exec.close();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /**
     * Abandons the open capture: the stream stops capturing, whatever it recorded is destroyed,
     * and the slot returns to the phase and segments it had before the capture began. Safe on an
     * invalidated capture (the usual reason to abort); a driver complaint about ending it is
     * logged, not thrown, since the slot is restored either way.
     *
     * @throws IllegalStateException when no capture is open
     */
    public void abortCapture() {
        lock.lock();
        try {
            SlotState capturing = requireCapturing("abort a capture");
            StreamCapture aborted = capture;
            capture = null;
            state = capturing.settled();
            counters.add(SlotCounters.ABORTS, 1);
            try {
                aborted.abort();
            } catch (RuntimeException e) {
                LOG.warn("{}: ending the aborted capture failed; the slot is restored, but if its stream still "
                        + "reports a capture, end that capture before using the stream", describe(), e);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Drops every segment and the spare executable, and returns to IDLE; dropped executables are
     * closed, so retirement destroys each once its last launch has completed.
     *
     * @return whether a segment was dropped
     * @throws IllegalStateException while a capture is open (end or abort it first) or after the
     *     group was retired; nothing is dropped then
     */
    public boolean reset() {
        List<GraphExec> dropped;
        SlotState current;
        lock.lock();
        try {
            current = state;
            requireSettled(current, "reset");
            SlotState dropping = current.dropping(SlotPhase.IDLE);
            state = dropping;
            awaitLaunches();
            state = dropping.drained(); // no replay launches what it dropped any more: their launches folded in
            counters.add(SlotCounters.RESETS, 1);
            dropped = withSpare(current.segments);
        } finally {
            lock.unlock();
        }
        closeAll(dropped);
        return current.segments.length > 0;
    }

    /**
     * Updates, in place, the arguments of one kernel node of segment {@code segment}: the
     * {@code occurrence}-th (0-based) node launching {@code arguments}' kernel takes its argument
     * values from its next launch on (see {@link GraphExec#updateKernelNode}). No re-capture, no
     * re-instantiation. Replays on other threads may run meanwhile: the executable makes each of
     * its launch calls and this update exclusive (the driver forbids them to overlap), so a replay
     * launches either the old arguments or the new ones, and those already launched are not
     * affected.
     *
     * @param segment the segment holding the node, by capture-order index
     * @param occurrence which of the segment's nodes that launch the kernel, counted from 0 in node order
     * @param arguments the kernel and its new argument values
     * @throws IndexOutOfBoundsException when the slot has no such segment
     * @throws IllegalArgumentException when the segment has no such node
     * @throws IllegalStateException while a capture is open or after the group was retired
     */
    public void updateKernelArguments(int segment, int occurrence, KernelLaunch arguments) {
        Objects.requireNonNull(arguments, "arguments");
        lock.lock();
        try {
            SlotState current = state;
            requireSettled(current, "update a node");
            checkIndex(segment, current.segments.length);
            current.segments[segment].updateKernelNode(occurrence, arguments);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Launches every segment on {@code stream}, in capture order. Takes no slot lock and allocates
     * nothing.
     *
     * @param stream the stream the segments are launched on
     * @throws IllegalStateException when the slot holds no segment, is being re-captured by
     *     another thread, or its group is retired
     * @throws CudaException when a launch fails; the segments before it were launched and their
     *     work is on the stream, the failed one and those after it were not
     */
    public void replay(Stream stream) {
        Objects.requireNonNull(stream, "stream");
        GraphExec[] segments = enterLaunch();
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
     * Launches one segment, by capture-order index. Takes no slot lock and allocates nothing.
     *
     * @param index the segment to launch
     * @param stream the stream it is launched on
     * @throws IndexOutOfBoundsException when there is no such segment (the message gives the count)
     * @throws IllegalStateException as {@link #replay}
     * @throws CudaException when the launch fails
     */
    public void replaySegment(int index, Stream stream) {
        Objects.requireNonNull(stream, "stream");
        GraphExec[] segments = enterLaunch();
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
    private GraphExec[] enterLaunch() {
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

    private void launch(GraphExec[] segments, int index, Stream stream) {
        segments[index].launch(stream); // the executable counts it (SlotState.segmentLaunches)
    }

    // Retirement of the whole group: SlotGroup holds every slot's lock across the check and the
    // retirement, so that no capture can open in between.

    ReentrantLock mutationLock() {
        return lock;
    }

    boolean capturingLocked() {
        return state.phase == SlotPhase.CAPTURING;
    }

    List<GraphExec> retireLocked() {
        SlotState current = state;
        SlotState dropping = current.dropping(SlotPhase.RETIRED);
        state = dropping;
        awaitLaunches();
        state = dropping.drained();
        return withSpare(current.segments);
    }

    /** {@code segments} and the spare, which the slot no longer keeps: every executable to close. */
    private List<GraphExec> withSpare(GraphExec[] segments) {
        List<GraphExec> all = new ArrayList<>(List.of(segments));
        GraphExec spare = installer.releaseSpare();
        if (spare != null) {
            all.add(spare);
        }
        return all;
    }

    /**
     * Closes every executable, even when one close throws: the rest must not leak because of it.
     * The first failure is rethrown with the others suppressed.
     */
    static void closeAll(List<GraphExec> executables) {
        EachOf.run(executables, GraphExec::close);
    }

    private SlotState requireCapturing(String action) {
        SlotState current = state;
        if (current.phase != SlotPhase.CAPTURING) {
            throw new IllegalStateException(describe() + ": cannot " + action + ": no capture is open (phase "
                    + current.phase + "); begin one first");
        }
        return current;
    }

    private void requireSettled(SlotState current, String action) {
        if (current.phase == SlotPhase.CAPTURING) {
            throw new IllegalStateException(describe() + ": cannot " + action
                    + " while a capture is open; end or abort the capture first");
        }
        if (current.phase == SlotPhase.RETIRED) {
            throw retiredError(action);
        }
    }

    private IllegalStateException notReplayable(SlotState view) {
        if (view.phase == SlotPhase.RETIRED) {
            return retiredError("replay");
        }
        if (view.updating) {
            return new IllegalStateException(describe() + ": cannot replay while another thread re-captures one of "
                    + "its segments; order replays of a slot after its re-capture");
        }
        return new IllegalStateException(describe() + ": cannot replay: nothing is captured; capture a segment first");
    }

    private IllegalStateException retiredError(String action) {
        return new IllegalStateException(describe() + ": cannot " + action + ": its group was retired; register a "
                + "new group");
    }

    private void checkIndex(int index, int count) {
        if (index < 0 || index >= count) {
            throw new IndexOutOfBoundsException(describe() + ": no segment " + index + "; the slot holds " + count
                    + " segment(s), indexed from 0");
        }
    }

    private String describe() {
        return "group '" + group.name() + "' slot '" + name + "'";
    }

    @Override
    public String toString() {
        return "GraphSlot[" + describe() + ", " + state.phase + ", " + state.segments.length + " segment(s)]";
    }
}
