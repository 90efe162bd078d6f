package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.TransferState;

/**
 * Whether the last transfer through a pinned host buffer is done, as a small state machine:
 * {@code COMPLETE -> UNFENCED} (work may have been queued, no fence yet) {@code -> EVENT_RECORDED}
 * (a fence event follows the transfer in its stream) {@code -> COMPLETE} (the fence completed).
 *
 * <p>The rules come from the failures they prevent:
 * <ul>
 *   <li>The state moves to UNFENCED <em>before</em> the transfer is submitted, so that a
 *       submission that throws, or reports an error after queueing work, can never leave the
 *       bytes marked complete.
 *   <li>A failed fence record is tried once more at once; if that repairs it the buffer is
 *       fenced, but the caller still gets the first error: the operation failed.
 *   <li>The transfer's own error is always the one reported; a failed fence record never
 *       replaces it.
 *   <li>UNFENCED can only become COMPLETE through a fresh fence recorded later on the same
 *       stream (which orders after the transfer) and its completion: an older event proves
 *       nothing about newer work.
 *   <li>EVENT_RECORDED waits on its own event only; it never re-records.
 *   <li>Only host access to the bytes waits for the last transfer on the host ({@link #await}).
 *       A new transfer is ordered after it on the GPU ({@link #prepareNext}, then
 *       {@link #nextWaitsForFence}): on the last transfer's stream, stream order does it; on
 *       another stream, a wait of that stream on the fence does. Either way the new transfer's
 *       fence follows the last one as well, so the last fence always covers every earlier
 *       transfer: the fence of a transfer on stream B, recorded after B waited for the fence of
 *       the transfer before it on stream A, completes only once A's transfer did.
 *   <li>Only transfers queued to run count. A transfer recorded into a stream capture is a node
 *       of a graph, which runs at each launch: it neither enters this machine nor records a
 *       fence (an event recorded inside a capture cannot be waited on once the capture ended).
 *       The owner orders after graph launches by other means.
 * </ul>
 * Not thread-safe: its owner serializes access.
 */
public final class TransferCompletion {

    /** A driver step: returns a CUresult (0 = success). */
    @FunctionalInterface
    public interface Step {
        int run();
    }

    private TransferState state = TransferState.COMPLETE;
    private boolean transferFailed;

    public TransferState state() {
        return state;
    }

    /**
     * Submits a transfer, then records its fence (twice at most).
     *
     * <p>If {@code transfer} throws, the fence is still recorded (the transfer may have queued
     * work before failing) and the original throwable propagates; a throwable from the fence
     * record is then suppressed into it, never thrown instead.
     *
     * @return the transfer's error if it failed, else the first record error if the first record
     *     failed (even when the retry repaired the fence), else 0; {@link #transferFailed()} says
     *     which (a result, not an object: submitting allocates nothing)
     */
    public int submit(Step transfer, Step record) {
        begin();
        int transferred;
        try {
            transferred = transfer.run();
        } catch (RuntimeException | Error thrown) {
            try {
                fence(record);
            } catch (RuntimeException | Error cleanup) {
                thrown.addSuppressed(cleanup);
            }
            throw thrown;
        }
        int recorded = fence(record);
        if (transferred != 0) {
            transferFailed = true;
            return transferred;
        }
        return recorded;
    }

    /** Whether the last {@link #submit}'s error came from the transfer itself (else from its fence). */
    public boolean transferFailed() {
        return transferFailed;
    }

    /**
     * The first half of a transfer submitted by someone else (a batch of copies through several
     * buffers, in one driver call): UNFENCED before the call, as {@link #submit} does. Follow it
     * with {@link #fence} whatever the call did, and report the call's own error first.
     */
    public void begin() {
        state = TransferState.UNFENCED;
        transferFailed = false;
    }

    /** Records the fence, retrying once; returns the first attempt's result. */
    public int fence(Step record) {
        int first = record.run();
        if (first == 0 || record.run() == 0) {
            state = TransferState.EVENT_RECORDED;
        }
        return first;
    }

    /**
     * The first step of ordering a new transfer after the last one on the GPU, before the new
     * transfer's stream is locked: when the last transfer's fence could not be recorded (UNFENCED)
     * and the new transfer goes on another stream, records a fresh fence on the last one's stream
     * ({@code refence}), for the new stream to wait on: the event's older record says nothing about
     * the transfer whose fence failed. Nothing otherwise: on the same stream, stream order puts the
     * new transfer after the last one, and the new fence covers both.
     *
     * @param sameStream whether the new transfer goes on the stream of the last one
     * @return 0, or {@code refence}'s error (the state then stays UNFENCED)
     */
    public int prepareNext(boolean sameStream, Step refence) {
        return sameStream ? 0 : refenceIfUnfenced(refence);
    }

    /** UNFENCED: records a fresh fence on the last transfer's stream (EVENT_RECORDED once it is); the record's result. */
    private int refenceIfUnfenced(Step refence) {
        if (state != TransferState.UNFENCED) {
            return 0;
        }
        int r = refence.run();
        if (r == 0) {
            state = TransferState.EVENT_RECORDED;
        }
        return r;
    }

    /**
     * The second step, just before the new transfer is queued (under its stream's lock): whether
     * that stream must first wait on the GPU for the last transfer's fence. Only when the fence is
     * recorded and the new transfer goes on another stream; a complete transfer needs nothing, and
     * on the same stream stream order suffices.
     *
     * @throws IllegalStateException when UNFENCED on another stream: {@link #prepareNext} had to
     *     record a fresh fence first
     */
    public boolean nextWaitsForFence(boolean sameStream) {
        if (state == TransferState.UNFENCED && !sameStream) {
            throw new IllegalStateException("the last transfer is unfenced on another stream: prepareNext records a "
                    + "fence there before the next transfer is ordered after it");
        }
        return state == TransferState.EVENT_RECORDED && !sameStream;
    }

    /**
     * Waits for the last transfer.
     *
     * @param waitEvent waits for the recorded fence (e.g. cuEventSynchronize or a query that
     *     reports NOT_READY)
     * @param refence records a fresh fence on the transfer's stream; only used when UNFENCED
     * @return 0 when complete, else the error of the step that failed (the state then stays
     *     where it was, or becomes EVENT_RECORDED when only the wait failed)
     */
    public int await(Step waitEvent, Step refence) {
        if (state == TransferState.COMPLETE) {
            return 0;
        }
        int r = refenceIfUnfenced(refence);
        if (r != 0) {
            return r;
        }
        r = waitEvent.run();
        if (r == 0) {
            state = TransferState.COMPLETE;
        }
        return r;
    }
}
