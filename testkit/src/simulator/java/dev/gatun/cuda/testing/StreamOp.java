package dev.gatun.cuda.testing;

import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * One operation on a simulated stream, or captured into a simulated graph: what it does when the
 * stream runs it, and what it touches, so that a free, unload or destroy can be checked against
 * the work still queued.
 */
final class StreamOp {
    final Runnable action;
    /** An event this operation waits for (cuStreamWaitEvent), or null. */
    final SimulatedStreams.Event awaited;
    /** The record of {@link #awaited} it waits for. */
    final long awaitedGeneration;
    /** Base addresses of the device allocations it touches. */
    final Set<Long> deviceUses;
    /** Base addresses of the pinned host allocations it touches. */
    final Set<Long> hostUses;
    /** The module whose kernel it launches, or 0. */
    long module;
    /** The graph executable whose replay queued it, or 0. */
    long exec;
    /** What a kernel launch's graph node describes; null for every other operation. */
    SimulatedModules.KernelNode kernel;
    /** What a memset, copy, event or conditional node of a graph built node by node is, for its DOT label; null otherwise. */
    String kind;
    /**
     * The event an event record or wait node of a graph names, or 0: such a node is no work of
     * its own, but queues a record or a wait at each launch, against the event's state then.
     */
    long event;
    /** A conditional node of a graph (before instantiation); null for every other operation. */
    SimulatedConditionals.Node conditional;
    /** The graph allocation an allocation or free node (kind MEM_ALLOC or MEM_FREE) names; null otherwise. */
    SimulatedMemory.Allocation allocation;
    /** A stream wait on a value (cuStreamWaitValue*): the operation runs once this holds; null for every other operation. */
    BooleanSupplier until;
    /** A batch memory-operation node of a graph: what each launch queues, in order; null otherwise. */
    List<StreamOp> batch;
    /** When it was queued, in the order of all submissions to the simulated GPU (0 until queued). */
    long sequence;
    /** For a queued event record: the event it records, and which of its records it is; null and 0 otherwise. */
    SimulatedStreams.Event records;
    long recordGeneration;

    StreamOp(Runnable action, SimulatedStreams.Event awaited, long awaitedGeneration, Set<Long> deviceUses,
            Set<Long> hostUses) {
        this.action = action;
        this.awaited = awaited;
        this.awaitedGeneration = awaitedGeneration;
        this.deviceUses = deviceUses;
        this.hostUses = hostUses;
    }

    /** An operation that runs {@code action} and waits for nothing. */
    StreamOp(Runnable action, Set<Long> deviceUses, Set<Long> hostUses) {
        this(action, null, 0, deviceUses, hostUses);
    }

    /** Whether it may run now: the event it waits for was recorded and the value it waits for is there. */
    boolean ready() {
        return (awaited == null || awaited.done(awaitedGeneration)) && (until == null || until.getAsBoolean());
    }

    /** A fresh copy for a graph launch to queue: the same work, uses and wait. */
    StreamOp launchCopy() {
        StreamOp copy = new StreamOp(action, deviceUses, hostUses);
        copy.until = until;
        copy.module = module;
        return copy;
    }
}
