package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.GrowableBufferCounters;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.driver.VirtualMemoryCalls;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The memory behind a {@code GrowableBuffer}: a reserved range of device addresses
 * ({@code cuMemAddressReserve}) with physical chunks ({@code cuMemCreate}) mapped into it on
 * demand, and the views of it handed out. Chunk {@code i} is mapped at
 * {@code base + i * chunkBytes}; chunks [0, chunks) are mapped and accessible. Growth maps whole
 * chunks and rolls back what it mapped when it fails; a shrink unmaps chunks top down; a chunk
 * whose unmap or release fails goes to retirement ({@link VmmChunk}) and holds the range until it
 * is gone. Closing closes every view, and the range is freed once every view's work completed.
 *
 * <p>Everything but the range's constants is guarded by {@link #lock()}: growth, shrinking and
 * views are cold paths, serialized per buffer.
 */
public final class VmmReservation extends NativeResource {

    private static final Logger LOG = LoggerFactory.getLogger(VmmReservation.class);
    private static final int READ_WRITE = CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE();

    final long base;
    private final long reservedBytes;
    final long chunkBytes;
    final int device;
    private final Object lock = new Object();
    private long[] handles = new long[8];
    private int chunks;
    /** Chunks whose unmap or release failed, waiting in retirement; each holds this reservation. */
    private int retiringChunks;
    private long size;
    private long highWater;
    private long grows;
    private long shrinks;
    /** In retirement: whether the top chunk is unmapped already, its release failed (retried from there). */
    private boolean topUnmapped;
    /** Whether the range itself is freed (the last step of retirement). */
    private boolean rangeFreed;
    /** Views handed out, in order of size (each at most the size then; views past a shrink are closed). */
    private final ArrayDeque<GrowableView> views = new ArrayDeque<>();

    public VmmReservation(ContextState state, long base, long reservedBytes, long chunkBytes, int device) {
        super(state, OwnerKind.GROWABLE_BUFFER);
        this.base = base;
        this.reservedBytes = reservedBytes;
        this.chunkBytes = chunkBytes;
        this.device = device;
    }

    /** Guards growth, shrinking, the size and the views. */
    public Object lock() {
        return lock;
    }

    public long base() {
        return base;
    }

    public long reservedBytes() {
        return reservedBytes;
    }

    public long chunkBytes() {
        return chunkBytes;
    }

    /** The usable bytes (under {@link #lock()}). */
    public long size() {
        return size;
    }

    /** Chunks needed to map [0, bytes). */
    private long chunksFor(long bytes) {
        return (bytes + chunkBytes - 1) / chunkBytes;
    }

    /** Whether growing to {@code newSize} needs chunks not mapped yet (under {@link #lock()}). */
    public boolean needsChunksFor(long newSize) {
        return chunksFor(newSize) > chunks;
    }

    /** Whether shrinking to {@code newSize} unmaps chunks (under {@link #lock()}). */
    public boolean unmapsBelow(long newSize) {
        return chunksFor(newSize) < chunks;
    }

    /**
     * Maps the chunks [0, newSize) needs and makes them accessible, in a synchronizing section
     * named {@code operation} (under {@link #lock()}); on failure the
     * chunks mapped by this call are unmapped and released again, and the error is rethrown.
     */
    public void mapFor(long newSize, String operation) {
        int target = (int) chunksFor(newSize);
        if (target > handles.length) {
            handles = Arrays.copyOf(handles, Math.max(target, 2 * handles.length));
        }
        VirtualMemoryCalls vm = context.calls().virtualMemory();
        int from = chunks;
        try (var _ = context.enterSection(operation)) {
            try {
                while (chunks < target) {
                    handles[chunks] = createAndMap(vm, base + chunks * chunkBytes);
                    chunks++;
                    context.stats().growableBytesMapped.add(chunkBytes);
                }
                vm.setAccess(base + from * chunkBytes, (target - from) * chunkBytes, device, READ_WRITE);
            } catch (RuntimeException e) {
                unmapDownTo(from); // nothing used the new chunks yet; failures go to retirement, never replace e
                throw e;
            }
        }
        grows++;
        highWater = Math.max(highWater, (chunks + retiringChunks) * chunkBytes);
    }

    /** A new chunk mapped at {@code address}; one never mapped is released at once. */
    private long createAndMap(VirtualMemoryCalls vm, long address) {
        long handle = vm.create(chunkBytes, device);
        try {
            vm.map(address, chunkBytes, handle);
            return handle;
        } catch (RuntimeException e) {
            // A failed release only leaks the handle, and the original error is the one reported.
            if (vm.release(handle) != 0) {
                LOG.warn("Releasing an unmapped chunk of {} failed after {}; its memory stays allocated", this,
                        e.getMessage());
            }
            throw e;
        }
    }

    /** Sets the usable size (under {@link #lock()}, after {@link #mapFor} or {@link #revokeViewsPast}). */
    public void resize(long newSize) {
        size = newSize;
    }

    /**
     * Unmaps and releases the chunks past {@code newSize}, top down, once all work that may touch
     * them has completed (the caller synchronized first), in a synchronizing section named
     * {@code operation}; under {@link #lock()}.
     */
    public void unmapPast(long newSize, String operation) {
        try (var _ = context.enterSection(operation)) {
            context.calls().checked().live(operation); // each call below makes the context current itself
            unmapDownTo((int) chunksFor(newSize));
        }
        shrinks++;
    }

    /** Unmaps and releases chunks [target, chunks), top down (each call makes the context current itself). */
    private void unmapDownTo(int target) {
        VirtualMemoryCalls vm = context.calls().virtualMemory();
        while (chunks > target) {
            int i = chunks - 1;
            // Safety: all work that may touch the chunk has completed (a shrink synchronized
            // first; a rolled-back growth mapped it in this call, and nothing used it yet).
            int r = vm.unmap(base + i * chunkBytes, chunkBytes);
            if (r != 0) {
                retireChunk(i, true, r);
            } else {
                int released = vm.release(handles[i]);
                if (released != 0) {
                    retireChunk(i, false, released);
                } else {
                    context.stats().growableBytesMapped.add(-chunkBytes);
                }
            }
            chunks = i;
        }
    }

    /** Hands chunk {@code i}, whose unmap (or, once unmapped, release) failed with {@code result}, to retirement. */
    private void retireChunk(int i, boolean mapped, int result) {
        LOG.warn("Unmapping chunk {} of {} failed with {}; retirement retries it", i, this, context.resultName(result));
        hold(); // the range is freed only after this chunk is gone
        retiringChunks++;
        VmmChunk chunk = new VmmChunk(this, i, base + i * chunkBytes, handles[i], mapped);
        context.retirement().submit(new Retirement(chunk, OwnerKind.GROWABLE_BUFFER, List.of(), chunk, true));
    }

    /** A retiring chunk is gone (freed or given up): it no longer counts, and no longer holds the range. */
    void chunkGone() {
        synchronized (lock) {
            retiringChunks--;
        }
        context.stats().growableBytesMapped.add(-chunkBytes);
        unhold();
    }

    /**
     * The view of [0, size): the newest one when it spans the size now, else a new one (under
     * {@link #lock()}).
     */
    public GrowableView viewOfSize() {
        GrowableView top = views.peekLast();
        while (top != null && top.isClosed()) {
            views.pollLast();
            top = views.peekLast();
        }
        if (top != null && top.size() == size) {
            return top;
        }
        GrowableView v = new GrowableView(context, this, size);
        views.addLast(v);
        return v;
    }

    /**
     * Closes the views that end past {@code newSize} and returns them, refusing (closing none)
     * when a captured graph holds one; under {@link #lock()}.
     *
     * @throws IllegalStateException when a captured graph holds such a view
     */
    public List<GrowableView> revokeViewsPast(long newSize) {
        List<GrowableView> revoked = new ArrayList<>();
        for (GrowableView v : views) {
            if (v.size() > newSize && !v.isClosed() && v.held()) {
                throw heldView(v, newSize);
            }
        }
        while (!views.isEmpty() && views.peekLast().size() > newSize) {
            GrowableView v = views.peekLast();
            if (!v.revoke(newSize)) {
                throw heldView(v, newSize); // a capture took it meanwhile; views closed so far stay closed
            }
            views.pollLast();
            revoked.add(v);
        }
        return revoked;
    }

    private IllegalStateException heldView(GrowableView v, long newSize) {
        return new IllegalStateException("cannot shrink " + identity() + " to " + newSize + " bytes: a captured graph "
                + "holds " + v.identity() + ", which ends past it; close the graph and its executables (they hold it "
                + "until their last launch completes), then shrink");
    }

    public GrowableBufferCounters counters() {
        synchronized (lock) {
            long held = chunks + retiringChunks;
            return new GrowableBufferCounters(reservedBytes, chunkBytes, held, held * chunkBytes, highWater, grows,
                    shrinks);
        }
    }

    @Override
    protected void beforeRetire() {
        synchronized (lock) {
            for (GrowableView v : views) {
                v.closeWithReservation(); // each holds this reservation until the work queued on its streams completes
            }
            views.clear();
        }
    }

    @Override
    protected Retirement.Release howToFree() {
        // Every view's retirement and every retiring chunk let go of their holds: the work
        // queued on every stream that used the range has completed.
        return this::freeAll;
    }

    /** Unmaps and releases every chunk top down, then frees the range; resumes where a failure stopped it. */
    private int freeAll() {
        synchronized (lock) {
            VirtualMemoryCalls vm = context.calls().virtualMemory();
            while (chunks > 0) {
                int i = chunks - 1;
                if (!topUnmapped) {
                    int r = vm.unmap(base + i * chunkBytes, chunkBytes);
                    if (r != 0) {
                        return r; // retried at the next reap, from this chunk
                    }
                    topUnmapped = true;
                }
                int r = vm.release(handles[i]);
                if (r != 0) {
                    return r;
                }
                context.stats().growableBytesMapped.add(-chunkBytes);
                topUnmapped = false;
                chunks = i;
            }
            if (!rangeFreed) {
                int r = vm.free(base, reservedBytes);
                if (r != 0) {
                    return r;
                }
                rangeFreed = true;
            }
            return 0;
        }
    }

    @Override
    protected boolean synchronizingFree() {
        return true; // the driver does not say that unmapping never synchronizes: the safe side
    }

    @Override
    public String identity() {
        return "GrowableBuffer#" + id() + " (" + reservedBytes + " bytes reserved at 0x" + Long.toHexString(base)
                + ", device " + device + ")";
    }
}
