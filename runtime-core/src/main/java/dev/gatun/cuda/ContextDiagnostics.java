package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.Completions;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ContextStats;
import dev.gatun.cuda.internal.memory.OutOfMemoryLadder;
import java.util.List;
import java.util.Optional;

/**
 * What a context can tell about itself ({@link CudaContext#diagnostics()}): its live owners,
 * counters, memory and health, for tests, metrics and leak reports, as Netty's
 * {@code PooledByteBufAllocator.metric()} is to its allocator.
 *
 * <p>The rule for what belongs here: <b>a view owns nothing; it reads.</b> Every method reads
 * what the context already keeps, and the only ones that change anything act on what they
 * report and on nothing an owner holds: giving back memory no owner uses
 * ({@link #trimGraphMemory()}, {@link DevicePoolView#trim()}), resetting a peak
 * ({@link #resetGraphMemoryPeaks()}), taking the host-callback failures reported
 * ({@link #takeHostCallbackFailures()}), switching the device pool's call-site profile. What
 * changes how the context's operations behave (its gate timeout) and everything that makes an
 * owner stay on the context. The counters keep counting after the context closed; the methods
 * that ask the driver need it open.
 */
public final class ContextDiagnostics {

    private final CudaContext context;
    private final ContextState state;
    private final OutOfMemoryLadder ladder;
    private final DevicePoolView devicePool;

    ContextDiagnostics(CudaContext context, ContextState state, OutOfMemoryLadder ladder, DevicePoolView devicePool) {
        this.context = context;
        this.state = state;
        this.ladder = ladder;
        this.devicePool = devicePool;
    }

    /**
     * {@return how many owners of this kind made from the context are open} Always counted, without leak tracking.
     *
     * @param kind which kind of owner to count
     */
    public long liveOwners(OwnerKind kind) {
        return state.live(kind);
    }

    /**
     * {@return the owners made from the context and not yet closed, oldest first, each with where it was
     * created} The context's own two streams, its view of the default memory pool and the modules
     * its registry holds are listed; its staging blocks ({@link OwnerKind#STAGING}) are not. A
     * snapshot, for tests that name what leaked.
     *
     * @throws IllegalStateException when the context was opened without leak tracking
     *     ({@link ContextOptions#withLeakTracking}), which alone keeps this list
     */
    public List<LiveOwner> liveOwners() {
        return state.liveResources().stream()
                .map(r -> new LiveOwner(r.kind(), r.id(), r.identity(), List.of(r.allocationSite().getStackTrace()),
                        r.borrowed()))
                .toList();
    }

    /** {@return a snapshot of the context's counters: allocations, frees, copies, retirements} */
    public ContextCounters counters() {
        return state.stats().snapshot(state.retirement().pending());
    }

    /** {@return a snapshot of the counters of the buffers allocated inside captures ({@link Stream#allocate})} */
    public GraphAllocationCounters graphAllocationCounters() {
        ContextStats stats = state.stats();
        return new GraphAllocationCounters(stats.graphAllocations.sum(), stats.graphAllocationsLive.sum(),
                stats.graphAllocationBytesLive.sum());
    }

    /** {@return what the out-of-memory ladder did (the runtime-core README's "Out of memory")} */
    public OutOfMemoryCounters outOfMemoryCounters() {
        return ladder.counters();
    }

    /** {@return free and total device memory ({@code cuMemGetInfo})} */
    public MemoryInfo memoryInfo() {
        context.checkOpen();
        return state.calls().memory().info();
    }

    /**
     * {@return where the context's memory is now: the device's free and total memory, Gatun's live
     * bytes by kind, each memory pool's, the device's graph memory and, with leak tracking, the
     * largest live allocations and their sites} Makes a few driver calls per pool.
     */
    public MemoryReport memoryReport() {
        context.checkOpen();
        return ladder.report();
    }

    /** {@return the device pool in front of {@link CudaContext#allocate}: its counters, call-site profile and trim} */
    public DevicePoolView devicePool() {
        return devicePool;
    }

    /**
     * {@return the device's graph memory (what captured stream allocations become), as the driver counts it
     * ({@code cuDeviceGetGraphMemAttribute}, four calls)} The figures are the device's, for every
     * context and library of this process on it; the peaks are since the process began or since
     * {@link #resetGraphMemoryPeaks()}.
     */
    public MemoryUsage graphMemoryUsage() {
        context.checkOpen();
        return state.calls().graphMemory().usage();
    }

    /**
     * Returns the device's graph memory that no graph uses to the OS ({@code cuDeviceGraphMemTrim}).
     * Memory of a graph that runs or is queued to run, and of allocations a launch left allocated
     * (until Gatun frees them after their graph and executable are gone), stays reserved.
     */
    public void trimGraphMemory() {
        context.checkOpen();
        state.calls().graphMemory().trim();
    }

    /** Resets both peaks of the device's graph memory to their current values ({@code cuDeviceSetGraphMemAttribute}). */
    public void resetGraphMemoryPeaks() {
        context.checkOpen();
        state.calls().graphMemory().resetPeaks();
    }

    /**
     * {@return how many futures of {@link Stream#onComplete}, {@link Event#onComplete} and
     * {@link Fence#onComplete} on the context still wait for their host function} Zero once the
     * work they wait for is done and the dispatcher handed them to their executors.
     */
    public long pendingCompletions() {
        return Completions.pending(state);
    }

    /**
     * {@return how many watch streams the context has made for {@link Event#onComplete} and
     * {@link Fence#onComplete} (at most eight; zero once it closed)} Not owners: {@link #liveOwners()}
     * does not list them.
     */
    public int watchStreams() {
        return state.watches().count();
    }

    /**
     * {@return how many exceptions the context's host callbacks ({@link Graph#addHost},
     * {@link Stream#launchHostFunction}) threw} Each was also logged at ERROR.
     */
    public long hostCallbackFailureCount() {
        return state.hostCallbackFailures().count();
    }

    /**
     * {@return the exceptions the context's host callbacks threw since the last call, oldest first
     * (the first 16; later ones are counted and logged only)}, and forgets them. A callback runs on
     * the driver's thread long after the call that queued it returned, so this is where what it
     * threw surfaces.
     */
    public List<Throwable> takeHostCallbackFailures() {
        return state.hostCallbackFailures().take();
    }

    /** {@return the sticky error that poisoned the context, if any} */
    public Optional<CudaException> poisonedBy() {
        return Optional.ofNullable(state.poison());
    }

    @Override
    public String toString() {
        return "ContextDiagnostics[" + context + ", " + counters() + "]";
    }
}
