package dev.gatun.cuda.graph;

/**
 * What a {@link ValidationLatch} has done.
 *
 * @param generationsBegun generations opened (the device word cleared and a submitter pending)
 * @param cleanups generations consumed: each read and cleared the word exactly once
 * @param registeredRecipients recipients registered and not yet unregistered
 */
public record ValidationCounters(long generationsBegun, long cleanups, long registeredRecipients) {
}
