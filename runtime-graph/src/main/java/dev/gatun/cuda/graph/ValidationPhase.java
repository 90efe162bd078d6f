package dev.gatun.cuda.graph;

/**
 * The phase of a {@link ValidationLatch}'s current generation. The transient phases
 * (RESETTING, ATTACHING, CONSUMING) are each held by one thread for one short step and give other
 * threads a reason to wait or to fail, never a state to act on.
 */
public enum ValidationPhase {
    /** No generation open; {@code begin} may open one. */
    IDLE,
    /** A generation was reserved and its device word clear is being enqueued. */
    RESETTING,
    /** The word is cleared (stream-ordered); recipients may attach, then the submitter activates. */
    PREPARING,
    /** One recipient is being linked in; the generation returns to PREPARING after. */
    ATTACHING,
    /** Sealed: work that may raise flags is submitted; consumed at the request boundary. */
    ACTIVE,
    /** One consumer is reading and clearing the word and publishing the flags to every recipient. */
    CONSUMING
}
