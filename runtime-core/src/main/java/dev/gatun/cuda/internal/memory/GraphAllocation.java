package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;

/**
 * A stream-ordered allocation made inside a Gatun capture: an allocation node of the captured
 * graph, at an address fixed for the graph's life, whose memory exists only once a launch of the
 * graph allocated it (see {@link GraphAllocations}). Closed while its capture is open, it records
 * a free node; otherwise it is retired once its graph and executables let go of it, and freed
 * only if a launch left it allocated.
 */
public final class GraphAllocation extends DeviceMemory implements Retirement.Release {

    private final GraphAllocations.Allocation allocation;

    private GraphAllocation(ContextState context, long address, long bytes, StreamState capturing,
            GraphAllocations.Allocation allocation) {
        super(context, address, bytes, capturing);
        this.allocation = allocation;
    }

    /**
     * {@code bytes} (more than 0) allocated on {@code capturing} while the Gatun capture that made
     * {@code allocations} is open on it (call under the stream's lock): the driver records an
     * allocation node and returns its address. The caller admits it to the capture.
     */
    public static GraphAllocation allocate(ContextState context, StreamState capturing, GraphAllocations allocations,
            long bytes) {
        long address = context.calls().memory().allocateAsync(bytes, capturing.handle(), capturing.allocationOut());
        GraphAllocations.Allocation allocation = allocations.add(bytes);
        GraphAllocation memory = new GraphAllocation(context, address, bytes, capturing, allocation);
        allocation.ownedBy(memory);
        return memory;
    }

    /** Refuses work on {@code stream} that cannot reach the memory (see {@link GraphAllocations.Allocation#checkUsableOn}). */
    public void checkUsableOn(StreamState stream, Object owner) {
        allocation.checkUsableOn(stream, owner);
    }

    /** Refuses a synchronous host operation before the memory exists. */
    public void checkSynchronous(String operation, Object owner) {
        allocation.checkSynchronous(operation, owner);
    }

    @Override
    protected void beforeRetire() {
        allocation.closedDuringCapture(address); // a free node, while its capture is still open
    }

    @Override
    protected Retirement.Release howToFree() {
        // Unbacked: freed by its graph's free node, or never allocated (its graph was never
        // launched, or its capture was discarded): freeing the address would be an error.
        return allocation.backed() ? this : Retirement.Release.withoutDriver(allocation::retired);
    }

    @Override
    public int free() {
        // Every launch of its graph completed (its executables were destroyed before they let go
        // of it), and so did the work queued on every stream that used it.
        int r = freeAfterFences(syncStreamIfOpen());
        if (r == 0) {
            allocation.retired(); // counted apart: graph allocations are not in the stream-ordered counts
        }
        return r;
    }

    @Override
    protected boolean synchronizingFree() {
        return false;
    }

    @Override
    public String identity() {
        return describe(allocation.describe());
    }
}
