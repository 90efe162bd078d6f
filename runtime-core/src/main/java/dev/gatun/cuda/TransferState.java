package dev.gatun.cuda;

/**
 * Where the last transfer queued through a {@link PinnedBuffer} is ({@link PinnedBuffer#transferState()}):
 * {@code COMPLETE -> UNFENCED -> EVENT_RECORDED -> COMPLETE}. The host bytes are safe to touch
 * only when it is {@link #COMPLETE}; {@link PinnedBuffer#awaitTransfer()} waits for that.
 */
public enum TransferState {
    /** No transfer is in flight: the host bytes are the caller's. */
    COMPLETE,
    /** A transfer may have been queued and no fence follows it yet (a failed fence record leaves it here). */
    UNFENCED,
    /** A fence event follows the transfer on its stream; the transfer is done once it completes. */
    EVENT_RECORDED
}
