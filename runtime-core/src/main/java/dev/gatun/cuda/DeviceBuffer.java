package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ContextStats;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.pool.DevicePool;

/**
 * Device memory owned by Java: {@link #byteSize()} bytes on one device, from the context's
 * device pool ({@link CudaContext#allocate}) or stream-ordered ({@link Stream#allocate},
 * {@link MemoryPool#allocate}), or another process's memory mapped into this one
 * ({@link CudaContext#importBuffer}).
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
    private final Memory resource;

    /** Where a buffer's memory came from, which decides what its retirement releases. */
    private enum Origin {
        /** Allocated by Gatun: freed by retirement. */
        OWN,
        /** Another library's allocation ({@link CudaContext#borrowDeviceMemory}): never freed by Gatun. */
        BORROWED,
        /** Another process's allocation, mapped here (IPC): unmapped or freed as the import requires. */
        IMPORTED
    }

    /**
     * The resource behind a buffer, with its device range: the allocation's own, or a growable
     * buffer's view. The range lives here rather than in the {@code DeviceBuffer}, so that an
     * allocation, a hot path, makes no larger an owner for it.
     */
    abstract static class Memory extends NativeResource {
        final long address;
        final long size;

        Memory(ContextState contextState, OwnerKind kind, long address, long size) {
            this(contextState, kind, address, size, null);
        }

        /** As above, for an allocation made in {@code origin}'s stream order (null: none). */
        Memory(ContextState contextState, OwnerKind kind, long address, long size, StreamState origin) {
            super(contextState, kind, origin);
            this.address = address;
            this.size = size;
        }
    }

    private static class Resource extends Memory {
        /** The pool the block came from (cuMemAlloc), or null for a stream-ordered or empty allocation. */
        private final DevicePool pool;
        /** The stream of a stream-ordered allocation, or null for cuMemAlloc. */
        final StreamState allocatedOn;
        /** The memory pool a stream-ordered allocation came from, which it holds until freed; null for the device's current pool. */
        private final MemoryPool.Resource memoryPool;
        /** Another library's memory: never freed here (no pool, no stream, no memory pool). */
        private final boolean borrowed;
        /** Another process's allocation mapped with cuIpcOpenMemHandle: unmapped, never freed, here. */
        final boolean imported;

        Resource(ContextState contextState, long address, long size, DevicePool pool, StreamState allocatedOn,
                MemoryPool.Resource memoryPool, Origin origin) {
            // A stream-ordered allocation starts out used on its stream (an empty one is not used at all).
            super(contextState, OwnerKind.DEVICE_BUFFER, address, size, size == 0 ? null : allocatedOn);
            this.pool = pool;
            this.allocatedOn = allocatedOn;
            this.memoryPool = memoryPool;
            this.borrowed = origin == Origin.BORROWED;
            this.imported = origin == Origin.IMPORTED;
        }

        /**
         * For an allocation made inside a Gatun capture (an allocation node of its graph), where
         * it stands; else null. Only {@link GraphResource} has one, so that every other buffer's
         * resource, made on the allocation hot path, carries no field for it.
         */
        GraphAllocations.Allocation graph() {
            return null;
        }

        @Override
        public boolean borrowed() {
            return borrowed;
        }

        @Override
        protected void beforeRetire() {
            GraphAllocations.Allocation graph = graph();
            if (graph != null) {
                graph.closedDuringCapture(address); // a free node, while its capture is still open
            }
        }

        @Override
        protected boolean freeInStreamOrder(StreamState soleStream) {
            if (allocatedOn == null || size == 0 || soleStream == null || graph() != null) {
                // Several streams used it: wait for all their fences instead. A graph allocation
                // is retired only once its graph and executables let go of it (holds), and its
                // memory, if a launch made any, is freed after fences like this.
                return false;
            }
            StreamState on = soleStream;
            synchronized (on.lock()) {
                if (on.closed() || on.queuesIntoCapture()) {
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
            if (imported && memoryPool != null) {
                return new Retirement.Release() {
                    @Override
                    public int free() {
                        // Every fence of this process's work on the import completed. The driver
                        // frees an imported pool allocation with cuMemFree, which completes here
                        // before it returns: the importer's free precedes the exporter's, as the
                        // driver requires, once the application tells the exporter.
                        int r = context.calls().memory().free(address);
                        if (r == 0) {
                            memoryPool.freed(size);
                        }
                        return r;
                    }

                    @Override
                    public void abandoned() {
                        memoryPool.abandoned();
                    }
                };
            }
            if (imported) {
                // Every fence of this process's work on the mapping completed; the memory is the
                // exporter's, which frees it after every importer unmapped it.
                return () -> context.calls().ipc().closeMemory(address);
            }
            GraphAllocations.Allocation graph = graph();
            if (graph != null && !graph.backed()) {
                // Freed by its graph's free node, or never allocated: its graph was never launched,
                // or its capture was discarded. Freeing the address would be an error.
                return Retirement.Release.withoutDriver(graph::retired);
            }
            if (allocatedOn == null) {
                // Every fence on every stream that used the block completed: the pool may hand
                // it to the next request, or free it (the pool's backend counts that free).
                return () -> pool.release(address, size);
            }
            return new Retirement.Release() {
                @Override
                public int free() {
                    // All work that used it is complete (for a graph allocation: also every launch
                    // of its graph, whose executables were destroyed before they let go of it); a
                    // stream-ordered free on the synchronous stream, which never captures, avoids a
                    // synchronizing cuMemFree. Fall back to it only once the context's own streams
                    // are gone (shutdown, after a device-wide synchronize).
                    StreamState copy = context.syncStream();
                    int r;
                    boolean ordered = !copy.closed();
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
            GraphAllocations.Allocation graph = graph();
            if (graph != null) {
                graph.retired(); // counted apart: graph allocations are not in asyncAllocations
                return;
            }
            stats.asyncFrees.increment();
            stats.bytesLive.add(-size);
        }

        @Override
        protected boolean synchronizingFree() {
            // cuMemFree, or cuIpcCloseMemHandle (not documented as never synchronizing); a borrowed buffer frees nothing.
            return allocatedOn == null && !borrowed;
        }

        @Override
        public String identity() {
            return "DeviceBuffer#" + id() + " (" + size + " bytes at 0x" + Long.toHexString(address) + ", device "
                    + context.device() + (borrowed ? ", borrowed)" : imported ? ", imported)" : allocatedOn == null ? ")"
                    : graph() != null ? ", " + graph().describe() + ")"
                    : memoryPool == null ? ", stream-ordered)" : ", stream-ordered from " + memoryPool.identity() + ")");
        }
    }

    /** The resource of a graph allocation: a stream-ordered allocation made inside a Gatun capture. */
    private static final class GraphResource extends Resource {
        private final GraphAllocations.Allocation graph;

        GraphResource(ContextState contextState, long address, long size, StreamState capturing,
                GraphAllocations.Allocation graph) {
            super(contextState, address, size, null, capturing, null, Origin.OWN);
            this.graph = graph;
        }

        @Override
        GraphAllocations.Allocation graph() {
            return graph;
        }
    }

    private DeviceBuffer(CudaContext context, long address, long size, DevicePool pool, StreamState allocatedOn,
            MemoryPool.Resource memoryPool) {
        this(context, new Resource(context.state(), address, size, pool, allocatedOn, memoryPool, Origin.OWN));
    }

    private DeviceBuffer(CudaContext context, Resource r) {
        super(r);
        this.context = context;
        this.resource = r;
    }

    /** A view of memory another owner holds: {@code view} says whether it is still usable, and is closed by that owner. */
    private DeviceBuffer(CudaContext context, Memory view) {
        super(view, Tie.CLOSED_BY_ANOTHER);
        this.context = context;
        this.resource = view;
    }

    /**
     * {@code view}'s range as a buffer whose lifetime is {@code view}'s (a {@link GrowableBuffer}'s
     * mapped range): no Cleaner watches it, since its owner closes it.
     */
    static DeviceBuffer viewOf(CudaContext context, Memory view) {
        return new DeviceBuffer(context, view);
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
        return new DeviceBuffer(context, new Resource(context.state(), address, bytes, null, null, null, Origin.BORROWED));
    }

    /** A stream-ordered allocation on {@code stream}, not capturing (call under its lock). */
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

    /**
     * A stream-ordered allocation on {@code stream} while the Gatun capture that made
     * {@code allocations} is open on it (call under the stream's lock): the driver records
     * an allocation node of the captured graph and returns its address, fixed for the graph's
     * life. The caller records its use on the stream, so that the capture holds it like
     * everything its work uses; {@code bytes} more than 0.
     */
    static DeviceBuffer allocateInCapture(CudaContext context, StreamState stream, GraphAllocations allocations,
            long bytes) {
        ContextState contextState = context.state();
        long address = contextState.calls().memory().allocateAsync(bytes, stream.handle());
        GraphAllocations.Allocation allocation = allocations.add(bytes);
        Resource r = new GraphResource(contextState, address, bytes, stream, allocation);
        allocation.ownedBy(r);
        return new DeviceBuffer(context, r); // the caller admits it to the capture
    }

    /** As {@link #allocateAsync} (under the stream's lock), from {@code pool} ({@code cuMemAllocFromPoolAsync}); {@code bytes} more than 0. */
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

    /** Maps the buffer {@code handle} describes, exported by another process ({@link CudaContext#importBuffer}). */
    static DeviceBuffer importFrom(CudaContext context, IpcMemoryHandle handle) {
        ContextState contextState = context.state();
        contextState.calls().live("CudaContext.importBuffer");
        long address;
        // cuIpcOpenMemHandle maps memory and may synchronize, like an allocation.
        try (var _ = contextState.enterSection("cuIpcOpenMemHandle")) {
            address = contextState.calls().ipc().openMemory(handle.driverHandle());
        }
        return new DeviceBuffer(context, new Resource(contextState, address, handle.byteSize(), null, null, null, Origin.IMPORTED));
    }

    /** Maps another process's pool allocation from {@code pool}, which imported its pool ({@link MemoryPool#importAllocation}). */
    static DeviceBuffer importFromPool(CudaContext context, MemoryPool.Resource pool, IpcPoolAllocation allocation) {
        ContextState contextState = context.state();
        pool.holdForAllocation(); // the imported pool is destroyed only after this import is freed
        long address;
        try {
            address = contextState.calls().pools().importPointer(pool.handle(), allocation.driverHandle());
        } catch (RuntimeException e) {
            pool.notAllocated();
            throw e;
        }
        pool.importedAllocation(allocation.byteSize());
        return new DeviceBuffer(context, new Resource(contextState, address, allocation.byteSize(), null, null, pool, Origin.IMPORTED));
    }

    public CudaContext context() {
        return context;
    }

    /** Whether this buffer is another process's memory mapped into this one ({@link CudaContext#importBuffer}). */
    public boolean isImported() {
        return resource instanceof Resource r && r.imported;
    }

    /**
     * Exports this buffer for another process on the same machine, the way its allocation
     * allows; the case of the result says how the other process imports it
     * ({@link IpcBufferExport}):
     *
     * <ul>
     *   <li>memory from {@link CudaContext#allocate}: an {@link IpcMemoryHandle}
     *       ({@code cuIpcGetMemHandle}). Each block of the context's device pool is a whole
     *       {@code cuMemAlloc} allocation, which is what the driver exports (the handle names
     *       its base, this buffer's address), so pooled blocks export without an offset;
     *   <li>an allocation from a {@link MemoryPool} created with an export handle
     *       ({@link MemoryPoolOptions#withExportHandle}): an {@link IpcPoolAllocation}
     *       ({@code cuMemPoolExportPointer}); the other process needs the pool too
     *       ({@link MemoryPool#exportFileDescriptor()}).
     * </ul>
     *
     * <p>The exporter keeps this buffer open until every importer has closed its import (the
     * driver leaves a free before the importers' unmap undefined, and requires importers of a
     * pool allocation to free first), and orders its writes before the importers' reads (an
     * {@linkplain CudaContext#createInterprocessEvent interprocess event}). Closing a pooled
     * block early would also let the device pool hand it to another allocation of this process
     * while an importer still sees it.
     *
     * @throws IllegalStateException when the buffer is closed, empty, imported (the owning
     *     process exports it), borrowed from another library, a view of a growable buffer, a
     *     graph allocation ({@link #isGraphAllocation()}), or a stream-ordered allocation from the device's default pool
     *     ({@link Stream#allocate}) or from a pool created without an export handle: the message
     *     says how to allocate a buffer that can be shared
     * @throws CudaException e.g. {@code CUDA_ERROR_NOT_SUPPORTED} where the platform has no IPC
     */
    public IpcBufferExport exportForIpc() {
        resource.checkOpen();
        if (!(resource instanceof Resource r)) {
            throw new IllegalStateException(resource.identity() + " is a view of a growable buffer, whose chunks have no "
                    + "export handle; copy the bytes to share into a buffer from CudaContext.allocate and export that");
        }
        if (r.size == 0) {
            throw new IllegalStateException(r.identity() + " is empty: a 0-byte buffer has no allocation to share; "
                    + "export a buffer of at least 1 byte");
        }
        if (r.imported) {
            throw new IllegalStateException(r.identity() + " was imported from another process: export it from "
                    + "the process that allocated it");
        }
        if (r.borrowed()) {
            throw new IllegalStateException(r.identity() + " is another library's memory: export it from that library, "
                    + "or copy the bytes to share into a buffer from CudaContext.allocate");
        }
        if (r instanceof GraphResource) {
            throw new IllegalStateException(r.identity() + " is a graph allocation, whose memory its graph's launches "
                    + "allocate and free; copy the bytes to share into a buffer from CudaContext.allocate and export that");
        }
        if (r.allocatedOn == null) {
            return new IpcMemoryHandle(context.state().calls().ipc().memoryHandle(r.address), r.size);
        }
        if (r.memoryPool == null || r.memoryPool.exportHandle == PoolExportHandle.NONE) {
            throw new IllegalStateException(r.identity() + " is a stream-ordered allocation from "
                    + (r.memoryPool == null ? "the device's default pool" : "a pool created without an export handle")
                    + ", which cannot be shared; allocate the buffer to share with CudaContext.allocate, or from a "
                    + "MemoryPool created with MemoryPoolOptions.withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR)");
        }
        return new IpcPoolAllocation(context.state().calls().pools().exportPointer(r.address), r.size);
    }

    /** Size in bytes. */
    public long byteSize() {
        return resource.size;
    }

    /** Whether this is a view of another library's memory ({@link CudaContext#borrowDeviceMemory}), which Gatun never frees. */
    public boolean isBorrowed() {
        return resource.borrowed();
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
        return resource.address;
    }

    /** The whole buffer as bytes. */
    public DeviceView bytes() {
        return as(ElementType.BYTE);
    }

    /** The whole buffer as elements of {@code type}; its size must be a whole number of them. */
    public DeviceView as(ElementType type) {
        resource.checkOpen();
        long size = resource.size;
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
        checkGraphMemory(stream);
        resource.usedOn(stream);
    }

    /** For a graph allocation: refuses work on {@code stream} that cannot reach its memory (see {@link GraphAllocations}). */
    private void checkGraphMemory(StreamState stream) {
        if (resource instanceof GraphResource g) {
            g.graph.checkUsableOn(stream, g);
        }
    }

    /**
     * Refuses a synchronous host operation ({@code operation}) on a graph allocation whose memory
     * does not exist yet: inside its capture, or before its graph was launched.
     */
    void checkSynchronous(String operation) {
        if (resource instanceof GraphResource g) {
            g.graph.checkSynchronous(operation, g);
        }
    }

    /** Whether this buffer was allocated inside a stream capture: an allocation node of the captured graph. */
    public boolean isGraphAllocation() {
        return resource instanceof GraphResource;
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
        checkGraphMemory(stream);
        resource.usedOn(stream);
    }

    /** The allocation's resource: its uses, for synchronous copies ({@code SynchronousCopies}) and captures. */
    NativeResource resource() {
        return resource;
    }
}
