package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.VirtualMemoryCalls;
import dev.gatun.cuda.internal.transfer.SynchronousCopies;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Device memory that grows and shrinks in place, through CUDA's virtual memory management: a
 * range of device addresses is reserved once ({@code cuMemAddressReserve}), and physical chunks
 * ({@code cuMemCreate}) are mapped into it on demand ({@code cuMemMap}, {@code cuMemSetAccess}).
 * The {@link #baseAddress() base address} never changes, so a KV cache, say, can grow without
 * copying or re-pointing its kernels.
 *
 * <p>{@link #mapped()} is the usable range [0, {@link #size()}) as a {@link DeviceBuffer}: copies,
 * memsets, kernels and graphs take it as one range. A view stays valid while the buffer grows;
 * a {@link #shrink} below its end, or closing the buffer, closes it.
 *
 * <p>Growth maps whole chunks (the device's recommended allocation granularity by default); if
 * the device runs out of memory part way, the chunks mapped by that call are unmapped and
 * released again, and the buffer keeps its previous size and mappings. A shrink is a synchronous
 * operation: it waits for all work already queued on the context (and for other devices' work
 * on its views), then unmaps and releases the chunks past the new size. Closing unmaps and
 * releases everything and frees the range once the work queued on every stream that used a view
 * has completed ({@link #close()}: idempotent, and it closes every view).
 *
 * <p>Thread-safe: growth, shrinking, views and close are serialized per buffer.
 */
public final class GrowableBuffer extends Owner {

    private static final Logger LOG = LoggerFactory.getLogger(GrowableBuffer.class);
    private static final String RESERVE = "GrowableBuffer.reserve";
    private static final String GROW = "GrowableBuffer.grow";
    private static final String SHRINK = "GrowableBuffer.shrink";
    private static final int VMM_SUPPORTED = CudaDriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED();
    private static final int NOT_SUPPORTED = CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();
    private static final int READ_WRITE = CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE();

    private final CudaContext context;
    private final ContextState state;
    private final Resource resource;
    /** The buffer of the newest view, which {@link #mapped()} returns again while the size stays (guarded by the resource's lock). */
    private DeviceBuffer newestView;

    /**
     * The reserved range, its chunks and views, and their retirement. Chunk {@code i} is mapped at
     * {@code base + i * chunkBytes}; chunks [0, chunks) are mapped and accessible.
     */
    static final class Resource extends NativeResource {
        final long base;
        final long reservedBytes;
        final long chunkBytes;
        private final int device;
        /** Guards everything below: growth, shrinking and views are cold paths. */
        private final Object lock = new Object();
        private long[] handles = new long[8];
        private int chunks;
        /** Chunks whose unmap or release failed, waiting in retirement; each holds this resource. */
        private int retiringChunks;
        private long size;
        private long highWater;
        private long grows;
        private long shrinks;
        /** In retirement: whether the top chunk is unmapped already, its release failed (retried from there). */
        private boolean topUnmapped;
        /** Whether the range itself is freed (the last step of retirement). */
        private boolean rangeFreed;
        /** Views handed out, in order of size (each at most the size then, and views past a shrink are closed). */
        private final ArrayDeque<View> views = new ArrayDeque<>();

        Resource(ContextState state, long base, long reservedBytes, long chunkBytes, int device) {
            super(state, OwnerKind.GROWABLE_BUFFER);
            this.base = base;
            this.reservedBytes = reservedBytes;
            this.chunkBytes = chunkBytes;
            this.device = device;
        }

        /** Chunks needed to map [0, bytes). */
        long chunksFor(long bytes) {
            return (bytes + chunkBytes - 1) / chunkBytes;
        }

        GrowableBufferCounters counters() {
            synchronized (lock) {
                long held = chunks + retiringChunks;
                return new GrowableBufferCounters(reservedBytes, chunkBytes, held, held * chunkBytes, highWater, grows,
                        shrinks);
            }
        }

        /** Unmaps and releases chunks [target, chunks), top down; the context is current. */
        private void unmapDownTo(int target) {
            VirtualMemoryCalls vm = context.calls().virtualMemory();
            while (chunks > target) {
                int i = chunks - 1;
                long address = base + i * chunkBytes;
                // Safety: all work that may touch the chunk has completed (a shrink synchronized
                // first; a rolled-back growth mapped it in this call, and nothing used it yet).
                int r = vm.unmap(address, chunkBytes);
                if (r != 0) {
                    retireChunk(i, true, r);
                } else {
                    int released = vm.release(handles[i]);
                    if (released != 0) {
                        retireChunk(i, false, released);
                    }
                }
                chunks = i;
            }
        }

        /** Hands chunk {@code i}, whose unmap (or, once unmapped, release) failed with {@code result}, to retirement. */
        private void retireChunk(int i, boolean mapped, int result) {
            LOG.warn("Unmapping chunk {} of {} failed with {}; retirement retries it", i, this,
                    context.resultName(result));
            hold(); // the range is freed only after this chunk is gone
            retiringChunks++;
            Chunk chunk = new Chunk(this, i, base + i * chunkBytes, handles[i], mapped);
            context.retirement().submit(new Retirement(chunk, OwnerKind.GROWABLE_BUFFER, List.of(), chunk, true));
        }

        /** A retiring chunk is gone (freed or given up): it no longer counts, and no longer holds the range. */
        void chunkGone() {
            synchronized (lock) {
                retiringChunks--;
            }
            unhold();
        }

        /** Closes the views that end past {@code newSize}, refusing (changing nothing) when a captured graph holds one. */
        private List<View> revokeViewsPast(long newSize) {
            List<View> revoked = new ArrayList<>();
            for (View v : views) {
                if (v.size > newSize && !v.isClosed() && v.held()) {
                    throw heldView(v, newSize);
                }
            }
            while (!views.isEmpty() && views.peekLast().size > newSize) {
                View v = views.peekLast();
                v.revokedAt = newSize;
                if (!v.closeUnlessHeld()) {
                    v.revokedAt = -1;
                    throw heldView(v, newSize); // a capture took it meanwhile; views closed so far stay closed
                }
                views.pollLast();
                revoked.add(v);
            }
            return revoked;
        }

        private IllegalStateException heldView(View v, long newSize) {
            return new IllegalStateException("cannot shrink " + identity() + " to " + newSize + " bytes: a captured graph "
                    + "holds " + v.identity() + ", which ends past it; close the graph and its executables (they hold it "
                    + "until their last launch completes), then shrink");
        }

        @Override
        protected void beforeRetire() {
            synchronized (lock) {
                for (View v : views) {
                    v.close(); // each holds this resource until the work queued on its streams completes
                }
                views.clear();
            }
        }

        @Override
        protected Retirement.Release howToFree() {
            // Every view's retirement and every retiring chunk let go of their holds: the work
            // queued on every stream that used the range has completed.
            return () -> {
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
            };
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

    /** A chunk whose unmap or release failed during growth or shrink, retried by retirement. */
    private static final class Chunk implements Retirement.Release {
        private final Resource owner;
        private final int index;
        private final long address;
        private final long handle;
        private boolean mapped;

        Chunk(Resource owner, int index, long address, long handle, boolean mapped) {
            this.owner = owner;
            this.index = index;
            this.address = address;
            this.handle = handle;
            this.mapped = mapped;
        }

        @Override
        public int free() {
            VirtualMemoryCalls vm = owner.context().calls().virtualMemory();
            if (mapped) {
                // Safety: as when it was first unmapped: no work can reach the chunk any more.
                int r = vm.unmap(address, owner.chunkBytes);
                if (r != 0) {
                    return r;
                }
                mapped = false;
            }
            int r = vm.release(handle);
            if (r == 0) {
                owner.chunkGone();
            }
            return r;
        }

        @Override
        public void abandoned() {
            owner.chunkGone();
        }

        @Override
        public String toString() {
            return "chunk " + index + " of " + owner.identity();
        }
    }

    /**
     * A view's own resource: it frees nothing, and holds its buffer's range until the work queued
     * on the streams that used the view has completed.
     */
    static final class View extends DeviceBuffer.Memory {
        private final Resource buffer;
        /** The size a shrink cut this view at, or -1. */
        private volatile long revokedAt = -1;

        View(ContextState state, Resource buffer, long size) {
            buffer.hold(); // first: a buffer closed meanwhile refuses, before the view counts as live
            super(state, OwnerKind.DEVICE_BUFFER, buffer.base, size);
            this.buffer = buffer;
        }

        @Override
        protected Retirement.Release howToFree() {
            return Retirement.Release.withoutDriver(buffer::unhold);
        }

        @Override
        protected boolean synchronizingFree() {
            return false;
        }

        @Override
        public String identity() {
            long cut = revokedAt;
            return "DeviceBuffer#" + id() + " (view of bytes [0, " + size + ") of GrowableBuffer#" + buffer.id()
                    + ", device " + buffer.device + (cut < 0 ? ")" : "; the buffer shrank to " + cut
                    + " bytes, below its end: take a new view with GrowableBuffer.mapped())");
        }
    }

    private GrowableBuffer(CudaContext context, Resource resource) {
        super(resource);
        this.context = context;
        this.state = context.state();
        this.resource = resource;
    }

    /** Checks that the device supports virtual memory, then reserves the range {@code options} ask for. */
    static GrowableBuffer reserve(CudaContext context, GrowableBufferOptions options) {
        Device device = context.device();
        if (device.attribute(VMM_SUPPORTED) == 0) {
            throw new CudaException(NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "device " + device.ordinal()
                    + " has no virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0), "
                    + "so it cannot grow a buffer in place; allocate with CudaContext.allocate and copy to grow",
                    RESERVE, device.ordinal());
        }
        ContextState state = context.state();
        VirtualMemoryCalls vm = state.calls().virtualMemory();
        // Every mapping's size and address must be a multiple of the minimum granularity; the
        // recommended one (often larger) is the default chunk, for performance.
        long minimum = vm.granularity(device.ordinal(), false);
        long chunk = options.chunkBytes();
        if (chunk == 0) {
            chunk = vm.granularity(device.ordinal(), true);
        } else if (chunk % minimum != 0) {
            throw new IllegalArgumentException("chunkBytes " + chunk + " is not a multiple of device " + device.ordinal()
                    + "'s minimum allocation granularity, " + minimum + " bytes; use a multiple of it (or 0 for the "
                    + "recommended granularity)");
        }
        long asked = roundUp(options.maxBytes() == 0 ? device.totalMemoryBytes() : options.maxBytes(), chunk);
        long floor = Math.min(asked, roundUp(Math.max(options.minimumReservedBytes(), 1), chunk));
        long bytes = asked;
        long base;
        while (true) {
            try {
                base = vm.reserve(bytes, 0); // aligned to the minimum granularity, as every chunk offset is
                break;
            } catch (CudaException e) {
                boolean shortOfAddressSpace = e.result() == OUT_OF_MEMORY || e.result() == INVALID_VALUE;
                if (!shortOfAddressSpace || bytes <= floor) {
                    throw e;
                }
                bytes = Math.max(floor, roundUp(bytes / 2, chunk));
            }
        }
        if (bytes < asked) {
            LOG.info("Device {}: reserved {} bytes of address space for a growable buffer instead of the {} asked; "
                    + "the driver refused more", device.ordinal(), bytes, asked);
        }
        return new GrowableBuffer(context, new Resource(state, base, bytes, chunk, device.ordinal()));
    }

    private static long roundUp(long bytes, long unit) {
        long r = (bytes + unit - 1) / unit * unit;
        return r < bytes ? Long.MAX_VALUE / unit * unit : r; // no overflow past the largest whole number of units
    }

    public CudaContext context() {
        return context;
    }

    /** The first byte of the reserved range ({@code CUdeviceptr}); the same for the buffer's whole life. */
    public long baseAddress() {
        resource.checkOpen();
        return resource.base;
    }

    /** The bytes usable now: [0, size) is mapped. */
    public long size() {
        synchronized (resource.lock) {
            return resource.size;
        }
    }

    /** The reserved maximum: the most {@link #grow} can reach. */
    public long reservedBytes() {
        return resource.reservedBytes;
    }

    /** The size of each physical chunk; growth maps, and shrinking unmaps, whole chunks. */
    public long chunkBytes() {
        return resource.chunkBytes;
    }

    /**
     * Grows the usable range to {@code newSize} bytes, mapping the chunks it needs
     * ({@code cuMemCreate}, {@code cuMemMap}, then {@code cuMemSetAccess} for this context's
     * device). The new bytes are not initialized; the base address and existing bytes stay.
     * Nothing changes when {@code newSize} is the current size, or falls inside the chunks mapped.
     *
     * @throws ReservationExceededException when {@code newSize} exceeds {@link #reservedBytes()}
     * @throws IllegalArgumentException when {@code newSize} is below the current size (use {@link #shrink})
     * @throws CudaException e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}; the chunks this call mapped are
     *     unmapped and released again, and the buffer keeps its size and mappings
     * @throws CaptureActiveException when a global capture on this context stays active past the gate timeout
     */
    public void grow(long newSize) {
        synchronized (resource.lock) {
            checkOpen();
            long size = resource.size;
            if (newSize < size) {
                throw new IllegalArgumentException(resource.identity() + " is " + size + " bytes; cannot grow it to "
                        + newSize + " (shrink it instead)");
            }
            if (newSize > resource.reservedBytes) {
                throw new ReservationExceededException(resource.identity(), newSize, resource.reservedBytes);
            }
            long target = resource.chunksFor(newSize);
            if (target > resource.chunks) {
                state.calls().live(GROW);
                state.reap();
                mapChunks((int) target);
                resource.grows++;
                resource.highWater = Math.max(resource.highWater,
                        (resource.chunks + resource.retiringChunks) * resource.chunkBytes);
            }
            resource.size = newSize;
        }
    }

    /** Maps chunks [chunks, target) and makes them accessible; on failure, rolls them back and rethrows. */
    private void mapChunks(int target) {
        Resource r = resource;
        if (target > r.handles.length) {
            r.handles = Arrays.copyOf(r.handles, Math.max(target, 2 * r.handles.length));
        }
        VirtualMemoryCalls vm = state.calls().virtualMemory();
        int from = r.chunks;
        try (var _ = state.enterSection(GROW)) {
            try {
                while (r.chunks < target) {
                    long handle = vm.create(r.chunkBytes, r.device);
                    try {
                        vm.map(r.base + r.chunks * r.chunkBytes, r.chunkBytes, handle);
                    } catch (RuntimeException e) {
                        // Never mapped: released at once; a failed release only leaks the handle,
                        // and the original error is the one reported.
                        if (vm.release(handle) != 0) {
                            LOG.warn("Releasing an unmapped chunk of {} failed after {}; its memory stays allocated",
                                    r, e.getMessage());
                        }
                        throw e;
                    }
                    r.handles[r.chunks++] = handle;
                }
                vm.setAccess(r.base + from * r.chunkBytes, (target - from) * r.chunkBytes, r.device, READ_WRITE);
            } catch (RuntimeException e) {
                r.unmapDownTo(from); // nothing used the new chunks yet; failures go to retirement, never replace e
                throw e;
            }
        }
    }

    /**
     * Shrinks the usable range to {@code newSize} bytes, unmapping and releasing the chunks past
     * it. Synchronous: it first waits for all work already queued on this context's streams, and
     * for other devices' work on its views, since any of it may touch the chunks unmapped. Views
     * that end past {@code newSize} are closed; the bytes below it stay as they are.
     *
     * @throws IllegalArgumentException when {@code newSize} is negative or above the current size
     * @throws IllegalStateException when a captured graph holds a view that ends past {@code newSize}
     *     (nothing is unmapped then)
     * @throws CaptureActiveException on a thread capturing in global mode, or when a global
     *     capture stays active past the gate timeout
     */
    public void shrink(long newSize) {
        synchronized (resource.lock) {
            checkOpen();
            long size = resource.size;
            if (newSize < 0 || newSize > size) {
                throw new IllegalArgumentException(resource.identity() + " is " + size + " bytes; cannot shrink it to "
                        + newSize + " (grow it instead, or give 0 .. " + size + ")");
            }
            int target = (int) resource.chunksFor(newSize);
            boolean unmaps = target < resource.chunks;
            if (unmaps) { // refused before anything changes
                state.calls().live(SHRINK);
                state.ordering().refuseDuringOwnCapture(SHRINK);
            }
            List<View> revoked = resource.revokeViewsPast(newSize);
            resource.size = newSize;
            if (unmaps) {
                SynchronousCopies copies = context.copies();
                StreamState copy = copies.enterSynchronous(SHRINK, resource, null);
                for (View v : revoked) {
                    v.orderAfterForeignUses(copy);
                }
                copies.synchronize(copy);
                try (var _ = state.enterSection(SHRINK)) {
                    state.calls().context().makeCurrent(SHRINK);
                    resource.unmapDownTo(target);
                }
                resource.shrinks++;
            }
        }
        state.reap();
    }

    /**
     * The usable range [0, {@link #size()}) as a device buffer, for copies, memsets, kernels and
     * graphs: it stays valid while this buffer grows, and is closed by a {@link #shrink} below its
     * end or by closing this buffer (after which using it throws {@link IllegalStateException}).
     * Closing it ends the view early and frees nothing. Calls at the same size return the same view.
     */
    public DeviceBuffer mapped() {
        synchronized (resource.lock) {
            checkOpen();
            View top = resource.views.peekLast();
            while (top != null && top.isClosed()) {
                resource.views.pollLast();
                top = resource.views.peekLast();
            }
            if (top != null && top.size == resource.size) {
                if (newestView == null || newestView.resource() != top) {
                    newestView = DeviceBuffer.viewOf(context, top);
                }
                return newestView;
            }
            View v = new View(state, resource, resource.size);
            resource.views.addLast(v);
            newestView = DeviceBuffer.viewOf(context, v);
            return newestView;
        }
    }

    /** Reserved, mapped and high-water bytes, chunks, and the growth and shrink counts. Readable after close. */
    public GrowableBufferCounters counters() {
        return resource.counters();
    }

    private void checkOpen() {
        context.checkOpen();
        resource.checkOpen();
    }
}
