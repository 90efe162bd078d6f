package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ContextStats;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.pool.DevicePool;

/**
 * Device memory owned by Java: {@link #byteSize()} bytes on one device, from the context's
 * device pool ({@link CudaContext#allocate}) or stream-ordered ({@link Stream#allocate},
 * {@link MemoryPool#allocate}).
 * Read and write it through typed, bounds-checked {@linkplain DeviceView views}.
 *
 * <p>Closing never frees memory that queued GPU work may still touch: the buffer is freed once
 * the work queued on every stream that used it has completed (a stream-ordered allocation used
 * on one stream only is freed at once, in that stream's order).
 *
 * <p>A {@linkplain CudaContext#borrowDeviceMemory borrowed} buffer views another library's
 * allocation: it is used like any other, but closing it only ends Gatun's view, once Gatun's
 * work queued on it has completed; the memory is never freed by Gatun.
 *
 * <p>A {@link GrowableBuffer#mapped()} view is a buffer too, over memory the growable buffer
 * owns: closing it ends the view (and frees nothing); a shrink below its end, or closing the
 * growable buffer, closes it.
 */
public final class DeviceBuffer extends Owner {

    private final CudaContext context;
    /** The allocation's own resource, or, for a view of a growable buffer, the view's (which frees nothing). */
    private final NativeResource resource;
    private final long address;
    private final long size;

    private static final class Resource extends NativeResource {
        final long address;
        final long size;
        /** The pool the block came from (cuMemAlloc), or null for a stream-ordered or empty allocation. */
        private final DevicePool pool;
        /** The stream of a stream-ordered allocation, or null for cuMemAlloc. */
        final StreamState allocatedOn;
        /** The memory pool a stream-ordered allocation came from, which it holds until freed; null for the device's current pool. */
        private final MemoryPool.Resource memoryPool;
        /** Another library's memory: never freed here (no pool, no stream, no memory pool). */
        private final boolean borrowed;

        Resource(ContextState contextState, long address, long size, DevicePool pool, StreamState allocatedOn,
                MemoryPool.Resource memoryPool, boolean borrowed) {
            super(contextState, OwnerKind.DEVICE_BUFFER);
            this.address = address;
            this.size = size;
            this.pool = pool;
            this.allocatedOn = allocatedOn;
            this.memoryPool = memoryPool;
            this.borrowed = borrowed;
        }

        @Override
        public boolean borrowed() {
            return borrowed;
        }

        @Override
        protected boolean freeInStreamOrder(StreamState soleStream) {
            if (allocatedOn == null || size == 0 || soleStream == null) {
                return false; // several streams used it: wait for all their fences instead
            }
            StreamState on = soleStream;
            synchronized (on.captureLock()) {
                if (on.closed() || on.capturing()) {
                    return false;
                }
                // Every use of this allocation was queued on `on` (it is the only stream that used
                // it, or none did), so the driver frees it after that work, in order.
                if (context.calls().memory().freeAsync(address, on.handle()) != 0) {
                    return false;
                }
            }
            freed(context.stats());
            if (memoryPool != null) {
                memoryPool.freed(size); // outside the stream's lock: the pool's own retirement may record a fence on it
            }
            return true;
        }

        @Override
        protected Retirement.Release howToFree() {
            if (borrowed) {
                // Gatun's work on it completed; its owner frees it. Nothing Java-side to drop either.
                return Retirement.Release.withoutDriver(() -> { });
            }
            if (size == 0) {
                return () -> 0;
            }
            if (allocatedOn == null) {
                // Every fence on every stream that used the block completed: the pool may hand
                // it to the next request, or free it (the pool's backend counts that free).
                return () -> pool.release(address, size);
            }
            return new Retirement.Release() {
                @Override
                public int free() {
                    // All work that used it is complete; a stream-ordered free on a usable stream
                    // avoids a synchronizing cuMemFree. Fall back to it only once the context's own
                    // streams are gone (shutdown, after a device-wide synchronize).
                    StreamState copy = context.copyStream();
                    int r;
                    boolean ordered = !copy.closed() && !copy.capturing();
                    if (ordered) {
                        // The fences of every stream that used it completed.
                        r = context.calls().memory().freeAsync(address, copy.handle());
                    } else {
                        // As above, and the caller (shutdown) holds the capture gate.
                        r = context.calls().memory().free(address);
                    }
                    if (r == 0) {
                        freed(context.stats());
                        if (memoryPool != null) {
                            if (ordered) {
                                memoryPool.usedOn(copy); // the pool's destroy waits for this free too
                            }
                            memoryPool.freed(size);
                        }
                    }
                    return r;
                }

                @Override
                public void abandoned() {
                    if (memoryPool != null) {
                        memoryPool.abandoned();
                    }
                }
            };
        }

        private void freed(ContextStats stats) {
            stats.asyncFrees.increment();
            stats.bytesLive.add(-size);
        }

        @Override
        protected boolean synchronizingFree() {
            return allocatedOn == null && !borrowed;
        }

        @Override
        public String identity() {
            return "DeviceBuffer#" + id() + " (" + size + " bytes at 0x" + Long.toHexString(address) + ", device "
                    + context.device() + (borrowed ? ", borrowed)" : allocatedOn == null ? ")"
                    : memoryPool == null ? ", stream-ordered)" : ", stream-ordered from " + memoryPool.identity() + ")");
        }
    }

    private DeviceBuffer(CudaContext context, long address, long size, DevicePool pool, StreamState allocatedOn,
            MemoryPool.Resource memoryPool) {
        this(context, new Resource(context.state(), address, size, pool, allocatedOn, memoryPool, false));
    }

    private DeviceBuffer(CudaContext context, Resource r) {
        super(r);
        this.context = context;
        this.resource = r;
        this.address = address;
        this.size = size;
    }

    /** A view of memory another owner holds: {@code view} says whether it is still usable, and is closed by that owner. */
    private DeviceBuffer(CudaContext context, NativeResource view, long address, long size) {
        super(view, Tie.CLOSED_BY_ANOTHER);
        this.context = context;
        this.resource = view;
        this.address = address;
        this.size = size;
    }

    /**
     * The first {@code size} bytes at {@code address} as a buffer whose lifetime is {@code view}'s
     * (a {@link GrowableBuffer}'s mapped range): no Cleaner watches it, since its owner closes it.
     */
    static DeviceBuffer viewOf(CudaContext context, NativeResource view, long address, long size) {
        return new DeviceBuffer(context, view, address, size);
    }

    static DeviceBuffer allocate(CudaContext context, long bytes) {
        if (bytes == 0) {
            return new DeviceBuffer(context, 0, 0, null, null, null);
        }
        context.state().calls().live("DeviceBuffer.allocate");
        DevicePool pool = context.pool();
        return new DeviceBuffer(context, pool.acquire(bytes), bytes, pool, null, null);
    }

    /** A view of another library's device memory, which the caller validated as {@code bytes} inside one allocation of {@code context}. */
    static DeviceBuffer borrow(CudaContext context, long address, long bytes) {
        return new DeviceBuffer(context, new Resource(context.state(), address, bytes, null, null, null, true));
    }

    static DeviceBuffer allocateAsync(CudaContext context, StreamState stream, long bytes) {
        ContextState contextState = context.state();
        if (bytes == 0) {
            return new DeviceBuffer(context, 0, 0, null, stream, null);
        }
        long address = contextState.calls().memory().allocateAsync(bytes, stream.handle());
        contextState.stats().asyncAllocations.increment();
        contextState.stats().bytesLive.add(bytes);
        DeviceBuffer buffer = new DeviceBuffer(context, address, bytes, null, stream, null);
        buffer.resource.usedOn(stream);
        return buffer;
    }

    /** As {@link #allocateAsync}, from {@code pool} ({@code cuMemAllocFromPoolAsync}); {@code bytes} more than 0. */
    static DeviceBuffer allocateFromPool(CudaContext context, StreamState stream, MemoryPool.Resource pool, long bytes) {
        ContextState contextState = context.state();
        pool.holdForAllocation();
        long address;
        try {
            address = contextState.calls().pools().allocate(bytes, pool.handle(), stream.handle());
        } catch (RuntimeException e) {
            pool.notAllocated();
            throw e;
        }
        pool.allocated(bytes, stream);
        contextState.stats().asyncAllocations.increment();
        contextState.stats().bytesLive.add(bytes);
        DeviceBuffer buffer = new DeviceBuffer(context, address, bytes, null, stream, pool);
        buffer.resource.usedOn(stream);
        return buffer;
    }

    public CudaContext context() {
        return context;
    }

    /** Size in bytes. */
    public long byteSize() {
        return size;
    }

    /** Whether this is a view of another library's memory ({@link CudaContext#borrowDeviceMemory}), which Gatun never frees. */
    public boolean isBorrowed() {
        return resource.borrowed;
    }

    /**
     * The device address ({@code CUdeviceptr}), for interop and kernel arguments. Valid while
     * this buffer is open: Gatun frees its own memory once closed and its queued work is done,
     * so other code must not free it, nor use it after {@link #close()}.
     *
     * @throws IllegalStateException when closed
     */
    public long address() {
        resource.checkOpen();
        return address;
    }

    /** The whole buffer as bytes. */
    public DeviceView bytes() {
        return as(ElementType.BYTE);
    }

    /** The whole buffer as elements of {@code type}; its size must be a whole number of them. */
    public DeviceView as(ElementType type) {
        resource.checkOpen();
        if (size % type.byteSize() != 0) {
            throw new IllegalArgumentException(size + " bytes are not a whole number of " + type + " elements");
        }
        return new DeviceView(this, 0, size, type);
    }

    public DeviceView asFloats() {
        return as(ElementType.FLOAT);
    }

    public DeviceView asInts() {
        return as(ElementType.INT);
    }

    public DeviceView asLongs() {
        return as(ElementType.LONG);
    }

    public DeviceView asDoubles() {
        return as(ElementType.DOUBLE);
    }

    /** Checks that this buffer is open and belongs to {@code user}, then records use on {@code stream}. */
    void useOn(CudaContext user, StreamState stream) {
        resource.checkOpen();
        if (user != context) {
            user.checkSame(context, resource.identity());
        }
        resource.usedOn(stream);
    }

    /**
     * Records use on a stream of {@code user} for a peer operation: the buffer may belong to
     * another device's context of the same driver.
     */
    void useOnPeer(CudaContext user, StreamState stream) {
        resource.checkOpen();
        if (user != context) { // on the launch path: no message is built unless it fails
            user.checkSameDriver(context, resource.identity());
        }
        resource.usedOn(stream);
    }

    /** The allocation's resource: its uses, for synchronous copies ({@code SynchronousCopies}) and captures. */
    NativeResource resource() {
        return resource;
    }
}
