package dev.gatun.cuda.graph;

/** Where one {@link ValidationRecipient} stands with respect to the latch's generations. */
enum RecipientState {
    /** Registered, never a recipient yet. */
    IDLE,
    /** A recipient of the generation in its word, which is not consumed yet. */
    PENDING,
    /** The generation in its word was consumed; its flags are kept for late readers (sticky). */
    COMPLETE,
    /** Unregistered; never a recipient again. */
    RETIRED
}
