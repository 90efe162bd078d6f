package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.NOT_READY;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUhostFn;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's streams and events, and the GPU's work queues: an operation runs as
 * soon as it is queued unless its stream is held (the GPU is "busy") or it waits for an event
 * whose record has not run. A host wait finishes only what the real driver waits for: a stream
 * synchronize that stream's queue (and, for each event wait in it, the other streams' work up
 * to the awaited record), an event synchronize the work before that record, a context
 * synchronize every stream of the context. Other held work stays queued, as on a busy GPU, so a
 * free or unmap the host orders by a wait on the wrong stream shows as a violation.
 *
 * <p>Operations the driver refuses on a capturing stream (a synchronize or query of it) fail
 * with {@code CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED} and invalidate its capture; an event whose
 * last record went into a capture answers a query or synchronize with
 * {@code CUDA_ERROR_CAPTURED_EVENT} while that capture is open, and a stream that waits on it joins
 * the capture (its later work is captured too, until the capture ends; the capture's stream must
 * have waited for the joined stream's last work by then, or the end fails with
 * {@code CUDA_ERROR_STREAM_CAPTURE_UNJOINED}). Once that capture has ended, the event is not valid
 * for a query, a synchronize or a wait until it is recorded again outside a capture: each answers
 * {@code CUDA_ERROR_INVALID_VALUE} and logs why, as the driver does ("Event is not valid. This can
 * be related to a graph capture that is no longer running"). Work that fails as the GPU runs it (a kernel touching freed
 * memory) is recorded as a violation, not thrown into whichever host call made the GPU progress.
 *
 * <p>A host wait that finds work it waits for not yet run (a held stream's, or work behind an
 * event wait) is where a real host would block while the GPU works: each is counted, by function
 * ({@link #blockingWaits}), so a test can tell an operation that returns at once from one that
 * waits for the GPU.
 */
final class SimulatedStreams {

    static final class Stream {
        final ArrayDeque<StreamOp> queue = new ArrayDeque<>();
        final int priority;
        /** The context it was created in (the thread's current one, or the one a test named). */
        final long context;
        boolean held;
        int captureStatus;
        /**
         * Operations captured (not run) while a capture is open on it: one begun here through
         * cuStreamBeginCapture, or one it joined (shared with that capture's stream).
         */
        List<StreamOp> captured;
        /** The stream whose capture this one joined by waiting on an event recorded in it; null otherwise. */
        Stream joinedTo;
        /** Joined, it captured work that the capture's own stream has not waited for since: ending then fails. */
        boolean unjoined;
        /**
         * The carrier (OS thread) that began the capture on it in global or thread-local mode: the
         * only one the driver lets end it; null for a relaxed capture, or none.
         */
        Thread captureCarrier;
        /** Whether the capture begun on it (cuStreamBeginCapture) is in global mode, until it ends. */
        boolean globalCapture;

        Stream(int priority, long context) {
            this.priority = priority;
            this.context = context;
        }
    }

    static final class Event {
        final boolean timing;
        /** Created with CU_EVENT_INTERPROCESS: exportable with cuIpcGetEventHandle. */
        boolean interprocess;
        /** How many records were queued. */
        long recorded;
        /** The latest record that ran. */
        long completed;
        /**
         * Records queued on a stream that have not run: a wait queued for one of them waits for
         * that record, even when a later record of the event, on another stream, ran first (as
         * cuStreamWaitEvent does: later records do not move a wait already queued).
         */
        final Set<Long> pending = new HashSet<>();
        long timestamp;
        /** Its last record went into a stream capture: a node of a graph, not work that runs. */
        boolean lastRecordCaptured;
        /** For such a record: the stream that made it, and the capture (its operations) it went into. */
        Stream capturedBy;
        List<StreamOp> captureOf;

        Event(boolean timing) {
            this.timing = timing;
        }

        /** Whether record {@code generation} has run (or, captured, counts as run once a later one did). */
        boolean done(long generation) {
            return generation <= completed && !pending.contains(generation);
        }
    }

    private final FakeDriverApi gpu;
    private final Map<Long, Stream> streams = new LinkedHashMap<>();
    final Map<Long, Event> events = new HashMap<>();
    private long clockNanos;
    /** Host functions queued with cuLaunchHostFunc, ever. */
    long hostFunctionsQueued;
    /** Operations queued so far, and the number of the one running now (see {@link #running()}). */
    private long submissions;
    private long running;
    /** Handles of destroyed streams (the simulator never reuses a handle), to flag a use after the destroy. */
    private final Set<Long> destroyed = new HashSet<>();
    /** The streams a host wait is running through now, to tell a cycle of waits (a GPU deadlock). */
    private final Set<Stream> finishing = new HashSet<>();
    /** The host waits so far that found work they wait for not yet run (the host would have blocked), by function, in order. */
    final List<String> blockingWaits = new ArrayList<>();

    SimulatedStreams(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuStreamCreateWithPriority(MemorySegment out, int flags, int priority) {
        out.set(ValueLayout.JAVA_LONG, 0, create(priority, gpu.contexts.current()));
        return SUCCESS;
    }

    /**
     * The stream of {@code context} with a global-mode capture open, or null. While one is, the
     * driver refuses a potentially synchronizing call (cuMemAlloc, cuMemFree...) on any thread and
     * invalidates that capture: Gatun's capture gate exists to keep such calls out.
     */
    Stream globalCaptureOpen(long context) {
        for (Stream s : streams.values()) {
            if (s.globalCapture && s.captured != null && s.context == context) {
                return s;
            }
        }
        return null;
    }

    /** A new stream of {@code context}; its handle. */
    long create(int priority, long context) {
        long h = gpu.newHandle();
        streams.put(h, new Stream(priority, context));
        return h;
    }

    public int cuStreamGetCtx(MemorySegment stream, MemorySegment context) {
        Stream s = stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        context.set(ValueLayout.JAVA_LONG, 0, s.context);
        return SUCCESS;
    }

    public int cuStreamGetPriority(MemorySegment stream, MemorySegment priority) {
        Stream s = stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        priority.set(ValueLayout.JAVA_INT, 0, s.priority);
        return SUCCESS;
    }

    public int cuStreamDestroy_v2(MemorySegment stream) {
        Stream s = stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (!s.queue.isEmpty()) {
            // The real driver would finish the work and then release the stream; Gatun
            // destroys only after the stream's final fence, so queued work here is a bug.
            gpu.violations.add("cuStreamDestroy on a stream with " + s.queue.size() + " queued operations");
        }
        streams.remove(stream.address());
        destroyed.add(stream.address());
        return SUCCESS;
    }

    public int cuStreamQuery(MemorySegment stream) {
        Stream s = stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) {
            return refuseInCapture(s);
        }
        return s.queue.isEmpty() ? SUCCESS : NOT_READY;
    }

    public int cuStreamSynchronize(MemorySegment stream) {
        Stream s = stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) {
            return refuseInCapture(s);
        }
        if (!s.queue.isEmpty()) {
            blockingWaits.add("cuStreamSynchronize");
        }
        finish(s);
        return SUCCESS;
    }

    /**
     * As the driver answers a query or synchronize of a capturing stream: it is not legal, and
     * invalidates the capture (ending it then reports CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
     */
    private static int refuseInCapture(Stream s) {
        invalidate(s);
        return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED();
    }

    /** Invalidates the capture {@code s} takes part in (begun on it or joined). */
    static void invalidate(Stream s) {
        Stream origin = s.joinedTo != null ? s.joinedTo : s;
        origin.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED();
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED();
    }

    /**
     * The end of the capture begun on {@code origin}: the streams that joined it leave it. Returns
     * whether one of them captured work that {@code origin} never waited for (unjoined).
     */
    boolean leaveCapture(Stream origin) {
        boolean unjoined = false;
        for (Stream j : streams.values()) {
            if (j.joinedTo == origin) {
                unjoined |= j.unjoined;
                j.joinedTo = null;
                j.unjoined = false;
                j.captured = null;
                j.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
            }
        }
        return unjoined;
    }

    public int cuStreamWaitEvent(MemorySegment stream, MemorySegment event, int flags) {
        Stream s = stream(stream.address());
        Event e = events.get(event.address());
        if (s == null || e == null) {
            return INVALID_HANDLE;
        }
        if (e.lastRecordCaptured) {
            if (!captureOver(e)) {
                return waitInCapture(s, e); // the capture the record went into is still open
            }
            return notValidAfterCapture("cuStreamWaitEvent");
        }
        if (e.completed < e.recorded) {
            queue(s, new StreamOp(() -> { }, e, e.recorded, Set.of(), Set.of()));
        }
        return SUCCESS;
    }

    /**
     * A wait on an event last recorded in a capture that is still open: a dependency inside that
     * capture, which a stream outside any capture joins.
     */
    private static int waitInCapture(Stream s, Event e) {
        if (s.captured == null) {
            Stream recorder = e.capturedBy;
            s.captured = e.captureOf;
            s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE();
            s.joinedTo = recorder.joinedTo != null ? recorder.joinedTo : recorder;
            return SUCCESS;
        }
        if (s.captured != e.captureOf) {
            return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_MERGE(); // two captures cannot merge
        }
        // In the capture: the waiter's later work depends on the recorder's work, which it now carries.
        Stream recorder = e.capturedBy;
        if (recorder != s) {
            recorder.unjoined = false;
            s.unjoined |= s.joinedTo != null;
        }
        return SUCCESS;
    }

    public int cuStreamIsCapturing(MemorySegment stream, MemorySegment status) {
        Stream s = stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        status.set(ValueLayout.JAVA_INT, 0, s.joinedTo != null ? s.joinedTo.captureStatus : s.captureStatus);
        return SUCCESS;
    }

    /**
     * Queues the host function: it runs when the work queued before it has run, on the thread
     * that makes the simulated GPU progress (under the simulated driver's lock, as the real
     * driver runs it on a thread of its own). Inside a capture it is captured as a host node.
     */
    public int cuLaunchHostFunc(MemorySegment stream, MemorySegment fn, MemorySegment userData) {
        Stream s = stream(stream.address());
        if (s == null || fn.equals(MemorySegment.NULL)) {
            return INVALID_HANDLE;
        }
        hostFunctionsQueued++;
        StreamOp op = new StreamOp(() -> CUhostFn.invoke(fn, userData), Set.of(), Set.of());
        op.kind = SimulatedCaptureAndGraphs.HOST; // a host node, when captured
        submit(s, op);
        return SUCCESS;
    }

    // ---- events ----

    public int cuEventCreate(MemorySegment out, int flags) {
        long h = gpu.newHandle();
        Event e = new Event((flags & CudaDriver.CU_EVENT_DISABLE_TIMING()) == 0);
        e.interprocess = (flags & CudaDriver.CU_EVENT_INTERPROCESS()) != 0;
        events.put(h, e);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuEventDestroy_v2(MemorySegment event) {
        if (gpu.graphs.namesEvent(event.address())) {
            // The driver does not retain an event its graph nodes name: a later launch would use a dead handle.
            gpu.violations.add("cuEventDestroy of an event a node of a live graph or executable names");
        }
        return events.remove(event.address()) == null ? INVALID_HANDLE : SUCCESS;
    }

    public int cuEventRecord(MemorySegment event, MemorySegment stream) {
        Event e = events.get(event.address());
        Stream s = stream(stream.address());
        if (e == null || s == null) {
            return INVALID_HANDLE;
        }
        // A record into a capturing stream is legal (an event node); what makes one of Gatun's own
        // fences there a defect shows later: the host cannot query or wait for it, and a stream
        // that waits for it never runs on (flagged by the host waits above).
        record(s, e);
        return SUCCESS;
    }

    /**
     * Queues a record of {@code e} on {@code s}: what cuEventRecord queues, and also what a
     * launch with an event attribute (after its kernel: the latest a trigger may fire) and a
     * graph's event record node queue.
     */
    void record(Stream s, Event e) {
        long generation = ++e.recorded;
        if (s.captured == null) {
            e.pending.add(generation);
        }
        StreamOp op = new StreamOp(() -> {
            e.pending.remove(generation);
            e.completed = Math.max(e.completed, generation);
            e.timestamp = clockNanos += 500_000;
        }, Set.of(), Set.of());
        op.records = e;
        op.recordGeneration = generation;
        e.lastRecordCaptured = s.captured != null;
        e.capturedBy = s.captured != null ? s : null;
        e.captureOf = s.captured;
        submit(s, op);
    }

    /** Queues on {@code s} a wait for {@code e}'s last record, unless it ran already: a graph's event wait node. */
    void await(Stream s, Event e) {
        if (e.completed < e.recorded) {
            submit(s, new StreamOp(() -> { }, e, e.recorded, Set.of(), Set.of()));
        }
    }

    /** Whether the capture that {@code e}'s last record (made in a capture) went into has ended. */
    private static boolean captureOver(Event e) {
        return e.captureOf != e.capturedBy.captured;
    }

    /** What the driver answers, and logs, for an event last recorded in a capture that is over. */
    private int notValidAfterCapture(String function) {
        gpu.logs.refused(function, "Event is not valid. This can be related to a graph capture that is no longer running");
        return CudaDriver.CUDA_ERROR_INVALID_VALUE();
    }

    public int cuEventQuery(MemorySegment event) {
        Event e = events.get(event.address());
        if (e == null) {
            return INVALID_HANDLE;
        }
        if (e.lastRecordCaptured) {
            return captureOver(e) ? notValidAfterCapture("cuEventQuery") : CudaDriver.CUDA_ERROR_CAPTURED_EVENT();
        }
        return e.completed >= e.recorded ? SUCCESS : NOT_READY;
    }

    /** Waits for the work before the event's last record, wherever it is queued, and for nothing else. */
    public int cuEventSynchronize(MemorySegment event) {
        Event e = events.get(event.address());
        if (e == null) {
            return INVALID_HANDLE;
        }
        if (e.lastRecordCaptured) {
            return captureOver(e) ? notValidAfterCapture("cuEventSynchronize") : CudaDriver.CUDA_ERROR_CAPTURED_EVENT();
        }
        if (e.completed < e.recorded) {
            blockingWaits.add("cuEventSynchronize");
            if (!runThroughRecord(e, e.recorded)) {
                gpu.violations.add("cuEventSynchronize would never return: the record it waits for is queued nowhere");
            }
        }
        pump();
        return SUCCESS;
    }

    /** The first version (before CUDA 12.8), which measures the same. */
    public int cuEventElapsedTime(MemorySegment ms, MemorySegment start, MemorySegment end) {
        return cuEventElapsedTime_v2(ms, start, end);
    }

    public int cuEventElapsedTime_v2(MemorySegment ms, MemorySegment start, MemorySegment end) {
        Event s = events.get(start.address());
        Event e = events.get(end.address());
        if (s == null || e == null) {
            return INVALID_HANDLE;
        }
        if (!s.timing || !e.timing) {
            return CudaDriver.CUDA_ERROR_INVALID_HANDLE();
        }
        if (s.lastRecordCaptured || e.lastRecordCaptured) {
            return CudaDriver.CUDA_ERROR_CAPTURED_EVENT();
        }
        if (s.completed < s.recorded || e.completed < e.recorded || s.recorded == 0 || e.recorded == 0) {
            return NOT_READY;
        }
        ms.set(ValueLayout.JAVA_FLOAT, 0, (e.timestamp - s.timestamp) / 1e6f);
        return SUCCESS;
    }

    // ---- the GPU's work queues ----

    /**
     * The live stream with this handle, or null; a handle of a destroyed stream is also a violation:
     * the driver may have reused it for another stream, or crash on it.
     */
    Stream stream(long handle) {
        Stream s = streams.get(handle);
        if (s == null && destroyed.contains(handle)) {
            gpu.violations.add("a driver call named stream 0x" + Long.toHexString(handle) + " after its cuStreamDestroy");
        }
        return s;
    }

    /** Every live stream, in creation order. */
    Collection<Stream> all() {
        return streams.values();
    }

    /** The stream a test control names; a handle that is no stream is a mistake in the test. */
    Stream streamOf(long handle) {
        Stream s = streams.get(handle);
        if (s == null) {
            throw new IllegalArgumentException("no simulated stream 0x" + Long.toHexString(handle));
        }
        return s;
    }

    void enqueue(Stream s, Runnable action, Set<Long> deviceUses, Set<Long> hostUses) {
        submit(s, new StreamOp(action, deviceUses, hostUses));
    }

    /** Queues an operation, or records it into the stream's capture when one is open. */
    void submit(Stream s, StreamOp op) {
        if (s.captured != null) {
            s.captured.add(op);
            gpu.captureGraphs.captured(s.captured, op); // a node of the capture's graph, after its dependencies
            if (s.joinedTo != null) {
                s.unjoined = true; // until the capture's stream waits for it
            }
            return;
        }
        queue(s, op);
        pump();
    }

    private void queue(Stream s, StreamOp op) {
        op.sequence = ++submissions;
        s.queue.add(op);
    }

    /**
     * The submission number of the operation the GPU is running now: an operation still queued
     * with a smaller one was submitted before it, yet has not run ({@link SimulatedMemory#checkUnused}).
     */
    long running() {
        return running;
    }

    /** Runs every operation that can run: streams not held, waits whose event completed. */
    void pump() {
        boolean progress = true;
        while (progress) {
            progress = false;
            for (Stream s : List.copyOf(streams.values())) {
                while (!s.held && !s.queue.isEmpty()) {
                    StreamOp op = s.queue.peekFirst();
                    if (!op.ready()) {
                        break;
                    }
                    s.queue.pollFirst();
                    run(s, op);
                    progress = true;
                }
            }
        }
    }

    /**
     * Runs one operation taken off {@code s}'s queue. A failure is the GPU's (a kernel touching
     * memory that is gone, a copy of a freed range): a violation, not an exception thrown into
     * whatever host call made the GPU progress.
     */
    private void run(Stream s, StreamOp op) {
        running = op.sequence;
        gpu.memory.checkBacked(op);
        try {
            op.action.run();
        } catch (RuntimeException e) {
            gpu.violations.add("work queued on stream 0x" + Long.toHexString(handleOf(s)) + " failed as the GPU ran it: "
                    + e.getMessage());
        }
    }

    private long handleOf(Stream s) {
        for (Map.Entry<Long, Stream> e : streams.entrySet()) {
            if (e.getValue() == s) {
                return e.getKey();
            }
        }
        return 0;
    }

    /**
     * A host wait for {@code s} (cuStreamSynchronize): the GPU finishes what is queued on
     * {@code s}, and for each event wait in it the other streams' work up to the awaited record;
     * everything else stays queued. {@code s} is no longer held: the host saw it go idle.
     */
    void finish(Stream s) {
        s.held = false;
        StreamOp last = s.queue.peekLast();
        if (last != null && !runThrough(s, last)) {
            gpu.violations.add("cuStreamSynchronize would never return: stream 0x" + Long.toHexString(handleOf(s))
                    + " waits for an event record that is queued nowhere");
        }
        pump();
    }

    /**
     * Runs {@code s}'s queue up to and including {@code last}, held or not, running first the work
     * each wait in it needs. False when a wait can never be satisfied (its record is queued
     * nowhere: captured, say): the host would wait forever.
     */
    private boolean runThrough(Stream s, StreamOp last) {
        if (!finishing.add(s)) {
            return false; // the streams wait for each other: a deadlock on the GPU
        }
        try {
            while (s.queue.contains(last)) {
                StreamOp op = s.queue.peekFirst();
                if (op.awaited != null && !op.awaited.done(op.awaitedGeneration)) {
                    if (!runThroughRecord(op.awaited, op.awaitedGeneration)) {
                        return false;
                    }
                    continue;
                }
                if (op.until != null && !op.until.getAsBoolean() && !runOthersUntil(s, op)) {
                    return false; // no queued work writes the value: the GPU waits forever
                }
                s.queue.pollFirst();
                run(s, op);
            }
            return true;
        } finally {
            finishing.remove(s);
        }
    }

    /**
     * For a host wait that reached a stream wait on a value ({@code op} on {@code s}): the GPU
     * runs the other streams' queued work, held or not (it finishes eventually), one operation at
     * a time, until the value is there. False when it never comes: no queued work writes it, and
     * the host, blocked in this wait, cannot either, so the real driver would never return.
     */
    private boolean runOthersUntil(Stream s, StreamOp op) {
        boolean progress = true;
        while (!op.until.getAsBoolean() && progress) {
            progress = false;
            for (Stream r : List.copyOf(streams.values())) {
                if (r != s && !r.queue.isEmpty() && !finishing.contains(r)) {
                    int before = r.queue.size();
                    runThrough(r, r.queue.peekFirst()); // one operation, or as far as r can go
                    progress |= r.queue.size() < before;
                }
            }
        }
        return op.until.getAsBoolean();
    }

    /** Runs the work queued up to record {@code generation} of {@code e}, on whichever stream it is queued. */
    private boolean runThroughRecord(Event e, long generation) {
        for (Stream r : List.copyOf(streams.values())) {
            for (StreamOp op : r.queue) {
                if (op.records == e && op.recordGeneration == generation) {
                    return runThrough(r, op) && e.done(generation);
                }
            }
        }
        return e.done(generation);
    }

    /** The GPU runs the next {@code n} operations of {@code s}, held or not (a test control: a kernel finished). */
    void advance(Stream s, int n) {
        for (int i = 0; i < n && !s.queue.isEmpty(); i++) {
            StreamOp op = s.queue.peekFirst();
            if (!op.ready()) {
                throw new IllegalStateException("the next operation waits for an event record or a value that is not there");
            }
            s.queue.pollFirst();
            run(s, op);
        }
        pump();
    }

    /** A host wait for a whole context (cuCtxSynchronize): the GPU finishes every stream of {@code context}. */
    void finishContext(long context) {
        if (streams.values().stream().anyMatch(s -> s.context == context && !s.queue.isEmpty())) {
            blockingWaits.add("cuCtxSynchronize");
        }
        for (Stream s : List.copyOf(streams.values())) {
            if (s.context == context && streams.containsValue(s)) {
                finish(s);
            }
        }
    }
}
