package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Layer 2, streams: each call names its operation once, owns its out-parameters and checks its result. */
public final class StreamCalls {

    private static final String CREATE = "cuStreamCreateWithPriority";
    private static final String DESTROY = "cuStreamDestroy";
    private static final String QUERY = "cuStreamQuery";
    private static final String SYNCHRONIZE = "cuStreamSynchronize";
    private static final String WAIT_EVENT = "cuStreamWaitEvent";
    private static final String IS_CAPTURING = "cuStreamIsCapturing";
    private static final int NON_BLOCKING = CudaDriver.CU_STREAM_NON_BLOCKING();
    private static final int CAPTURE_STATUS_NONE = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();

    private static final String GREEN_CREATE = "cuGreenCtxStreamCreate";

    private final Checked c;

    StreamCalls(Checked c) {
        this.c = c;
    }

    /**
     * A new non-blocking stream of this context (it does not synchronize with the legacy
     * default stream).
     *
     * @param priority within the context's range (the caller checked it)
     */
    public MemorySegment create(int priority) {
        MemorySegment green = c.green();
        if (green.address() != 0) {
            return createGreen(green, priority);
        }
        c.current(CREATE);
        MemorySegment out = c.out();
        // Safety: out holds the CUstream the driver writes; the context is current.
        c.check(c.api.cuStreamCreateWithPriority(out, NON_BLOCKING, priority), CREATE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * A stream of a green context runs on that context's SMs only when the driver makes it for the
     * green context itself ({@code cuGreenCtxStreamCreate}, which ignores the current context);
     * the driver requires the non-blocking flag.
     */
    private MemorySegment createGreen(MemorySegment green, int priority) {
        c.live(GREEN_CREATE);
        MemorySegment out = c.out();
        // Safety: green is the live CUgreenCtx this context was made from (destroyed only after the
        // context's close drained and destroyed every stream of it); out receives the CUstream.
        c.check(c.api.cuGreenCtxStreamCreate(out, green, NON_BLOCKING, priority), GREEN_CREATE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * Destroys a stream; the raw result, for retirement (sticky results still poison).
     *
     * @param stream a stream of this context with no queued work, that no one will use again
     */
    public int destroy(MemorySegment stream) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the stream is drained and unused from now on; its context
        // is current on this carrier, made so just now.
        return c.observe(c.api.cuStreamDestroy_v2(stream), DESTROY);
    }

    /** Whether all work queued on {@code stream} so far has completed. */
    public boolean query(MemorySegment stream) {
        c.live(QUERY);
        // Safety: the caller passes a live stream of this context.
        int r = c.api.cuStreamQuery(stream);
        if (r == 0) {
            return true;
        }
        if (r == CuResults.NOT_READY) {
            return false;
        }
        throw c.fail(r, QUERY);
    }

    /** The raw query result (0, {@link CuResults#NOT_READY}, or an error), for completion evidence. */
    public int poll(MemorySegment stream) {
        int refused = c.refusedInsideCallback();
        if (refused != 0) {
            return refused;
        }
        // Safety: the caller passes a live stream of this context.
        return c.observe(c.api.cuStreamQuery(stream), QUERY);
    }

    /** Blocks until all work queued on {@code stream} so far has completed. */
    public void synchronize(MemorySegment stream) {
        c.live(SYNCHRONIZE);
        // Safety: the caller passes a live stream of this context.
        c.check(c.api.cuStreamSynchronize(stream), SYNCHRONIZE);
    }

    /**
     * Makes later work on {@code stream} (of this context) wait for {@code event}'s last record;
     * does not block the host.
     *
     * @param event a live event of any context of the same driver, which the caller keeps from
     *     being destroyed until the wait is enqueued
     */
    public void waitEvent(MemorySegment stream, MemorySegment event) {
        c.live(WAIT_EVENT);
        // Safety: both handles are live per the caller's contract; waiting on another context's
        // event is legal within one driver.
        c.check(c.api.cuStreamWaitEvent(stream, event, 0), WAIT_EVENT);
    }

    /**
     * Whether {@code stream} is capturing now (in any mode, begun by anyone). True too when the
     * driver cannot tell: not knowing means not recording into it.
     */
    public boolean capturing(MemorySegment stream) {
        if (c.refusedInsideCallback() != 0) {
            return true; // not asked: "capturing" is the answer that lets nothing be queued
        }
        MemorySegment out = c.out();
        // Safety: out holds the one int the driver writes; the caller passes a live stream.
        int r = c.observe(c.api.cuStreamIsCapturing(stream, out), IS_CAPTURING);
        return r != 0 || out.get(ValueLayout.JAVA_INT, 0) != CAPTURE_STATUS_NONE;
    }
}
