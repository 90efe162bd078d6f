package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ForeignHandles;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.graph.CaptureSession;
import dev.gatun.cuda.internal.memory.ArenaBlock;
import dev.gatun.cuda.internal.memory.Borrowed;
import dev.gatun.cuda.internal.memory.DeviceMemory;
import dev.gatun.cuda.internal.memory.EmptyMemory;
import dev.gatun.cuda.internal.memory.GraphAllocation;
import dev.gatun.cuda.internal.memory.GrowableView;
import dev.gatun.cuda.internal.memory.ImportedMemory;
import dev.gatun.cuda.internal.memory.IpcMapping;
import dev.gatun.cuda.internal.memory.IpcPoolMapping;
import dev.gatun.cuda.internal.memory.PoolAllocation;
import dev.gatun.cuda.internal.memory.PoolMemory;
import dev.gatun.cuda.internal.memory.PooledBlock;
import dev.gatun.cuda.internal.memory.StreamOrdered;
import java.util.Objects;

/**
 * Device memory owned by Java: {@link #byteSize()} bytes on one device, from the context's
 * device pool ({@link CudaContext#allocate}) or stream-ordered ({@link Stream#allocate},
 * {@link MemoryPool#allocate}), or another process's memory mapped into this one
 * ({@link DeviceBuffer#importFrom}).
 * Read and write it through typed, bounds-checked {@linkplain DeviceView views}.
 *
 * <p>Closing never frees memory that queued GPU work may still touch: the buffer is freed once
 * the work queued on every stream that used it has completed (a stream-ordered allocation used
 * on one stream only is freed at once, in that stream's order).
 *
 * <p>A {@linkplain #isBorrowed() borrowed} buffer is memory Gatun did not allocate: another
 * library's allocation ({@link DeviceBuffer#borrow}) or another process's, mapped
 * here (an import). It is used like any other, but closing it only ends Gatun's view, or
 * unmaps this process's mapping of an import, once Gatun's work queued on it has completed; the
 * memory is never freed by Gatun.
 *
 * <p>A {@link GrowableBuffer#mapped()} view is a buffer too, over memory the growable buffer
 * owns: closing it ends the view (and frees nothing); a shrink below its end, or closing the
 * growable buffer, closes it.
 *
 * <p>The buffer is a handle: one reference to its memory, whose kind (one class per kind of
 * memory, in {@code internal.memory}) was chosen where it was allocated and decides how it is
 * freed. Once closed, a buffer stays closed: every use, and its {@link #byteSize()}, throws
 * {@link IllegalStateException}, even after its memory object stands for a later allocation.
 * Leaks of the allocations on the hot paths are watched one in
 * {@value dev.gatun.cuda.internal.memory.DeviceMemory#LEAK_SAMPLING}, every one with leak
 * tracking ({@link ContextOptions#withLeakTracking}).
 */
public final class DeviceBuffer implements AutoCloseable {

    private final DeviceMemory memory;

    private DeviceBuffer(DeviceMemory memory) {
        this.memory = memory;
    }

    /** The handle of newly made {@code memory}. */
    private static DeviceBuffer claim(DeviceMemory memory) {
        DeviceBuffer buffer = new DeviceBuffer(memory);
        memory.claimBy(buffer);
        return buffer;
    }

    /** A view of a growable buffer's range (its {@link GrowableBuffer#mapped()}), which that buffer closes. */
    static DeviceBuffer viewOf(GrowableView view) {
        return claim(view);
    }

    /** {@code bytes} from the context's device pool ({@link CudaContext#allocate}). */
    static DeviceBuffer allocate(CudaContext context, long bytes) {
        ContextState state = context.state();
        if (bytes == 0) {
            return claim(EmptyMemory.of(state));
        }
        state.calls().live("DeviceBuffer.allocate");
        return claim(PooledBlock.allocate(state, context.pool(), context.recyclers().blocks(), bytes, context.ladder()));
    }

    /**
     * Wraps {@code bytes} of device memory another library allocated, without taking it over:
     * a buffer Gatun can copy to and from and pass to kernels like its own. Closing it ends
     * Gatun's view once Gatun's work queued on it completed; Gatun never frees it. The other
     * library must keep the allocation alive until then.
     *
     * @param context the context the memory belongs to
     * @param address a {@code CUdeviceptr} inside an allocation of the context's device
     *     ({@code cuMemAlloc}, {@code cuMemAllocAsync}, a memory pool; checked with
     *     {@code cuPointerGetAttributes}: device memory, this context or device, and
     *     {@code [address, address + bytes)} inside the allocation's range)
     * @param bytes the length of the range, in bytes
     * @return Gatun's view of the memory, to close when Gatun no longer uses it
     * @throws IllegalArgumentException when the range is not device memory of the context, or
     *     runs past its allocation, or {@code bytes} is not positive
     */
    public static DeviceBuffer borrow(CudaContext context, long address, long bytes) {
        context.checkOpen();
        ContextState state = context.state();
        ForeignHandles.checkDeviceMemory(state, address, bytes);
        state.reap();
        return claim(Borrowed.of(state, address, bytes));
    }

    /** A stream-ordered allocation on {@code stream}, not capturing (call under its lock). */
    static DeviceBuffer allocateAsync(CudaContext context, StreamState stream, long bytes) {
        ContextState state = context.state();
        if (bytes == 0) {
            return claim(EmptyMemory.of(state));
        }
        StreamOrdered memory = StreamOrdered.allocate(state, stream, context.recyclers().streamOrdered(), bytes);
        DeviceBuffer buffer = claim(memory);
        memory.usedOn(stream);
        return buffer;
    }

    /**
     * A stream-ordered allocation of {@code bytes} (more than 0) on the stream {@code capture} was
     * begun on, while it is open (call under the stream's lock): an allocation node of the captured
     * graph, or a range of its capture arena. The capture holds the buffer from then on.
     */
    static DeviceBuffer allocateInCapture(CaptureSession capture, long bytes) {
        DeviceMemory memory = capture.allocate(bytes);
        DeviceBuffer buffer = claim(memory);
        capture.claimed(memory, buffer);
        return buffer;
    }

    /** As {@link #allocateAsync} (under the stream's lock), from {@code pool}; {@code bytes} more than 0. */
    static DeviceBuffer allocateFromPool(CudaContext context, StreamState stream, PoolMemory pool, long bytes) {
        PoolAllocation memory = PoolAllocation.allocate(context.state(), pool, stream, bytes);
        DeviceBuffer buffer = claim(memory);
        memory.usedOn(stream);
        return buffer;
    }

    /**
     * Maps device memory another process exported from a {@link CudaContext#allocate} buffer
     * ({@link #exportForIpc()}, an export of kind {@link IpcBufferExport.Kind#MEMORY_HANDLE};
     * {@code cuIpcOpenMemHandle} with {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}): a buffer of
     * {@link IpcBufferExport#byteSize()} bytes that this process reads and writes like its own.
     * It borrows the memory: closing it unmaps it ({@code cuIpcCloseMemHandle}) once the work
     * queued here on it completed, and never frees it; close it before the exporter closes the
     * original.
     *
     * @param context the context to map the memory into
     * @param export the export the other process sent
     * @return the mapped buffer, to close before the exporter closes the original
     * @throws IllegalArgumentException when {@code export} is a pool allocation's, which
     *     {@link MemoryPool#importAllocation} maps from the imported pool
     * @throws CaptureActiveException when a global capture on the context stays active past the gate timeout
     * @throws CudaException e.g. {@code CUDA_ERROR_INVALID_VALUE} for a handle of no live
     *     allocation, or {@code CUDA_ERROR_INVALID_CONTEXT} for one exported by this very process
     */
    public static DeviceBuffer importFrom(CudaContext context, IpcBufferExport export) {
        Objects.requireNonNull(export, "export");
        if (export.kind() != IpcBufferExport.Kind.MEMORY_HANDLE) {
            throw new IllegalArgumentException(export + " is a pool allocation's export: import the exporter's pool "
                    + "(MemoryPool.importFrom) and map it there with MemoryPool.importAllocation");
        }
        context.checkOpen();
        ContextState state = context.state();
        state.reap();
        state.calls().live("DeviceBuffer.importFrom");
        return claim(IpcMapping.open(state, export.driverBytes(), export.byteSize()));
    }

    /** Maps another process's pool allocation from {@code pool}, which imported its pool ({@link MemoryPool#importAllocation}). */
    static DeviceBuffer importFromPool(CudaContext context, PoolMemory pool, IpcBufferExport allocation) {
        return claim(IpcPoolMapping.open(context.state(), pool, allocation.driverBytes(), allocation.byteSize()));
    }

    /** Throws {@link IllegalStateException} when this buffer is closed. */
    private void checkOpen() {
        memory.checkOwnedBy(this);
    }

    /** {@return the context this buffer's memory belongs to} */
    public CudaContext context() {
        return (CudaContext) memory.context().api();
    }

    /**
     * {@return whether this buffer is another process's memory mapped into this one
     * ({@link #importFrom}, {@link MemoryPool#importAllocation})}
     */
    public boolean isImported() {
        return memory instanceof ImportedMemory;
    }

    /**
     * Exports this buffer for another process on the same machine, the way its allocation
     * allows; the export's {@link IpcBufferExport#kind() kind} says how the other process imports it:
     *
     * <ul>
     *   <li>memory from {@link CudaContext#allocate}: {@link IpcBufferExport.Kind#MEMORY_HANDLE}
     *       ({@code cuIpcGetMemHandle}). Each block of the context's device pool is a whole
     *       {@code cuMemAlloc} allocation, which is what the driver exports (the handle names
     *       its base, this buffer's address), so pooled blocks export without an offset;
     *   <li>an allocation from a {@link MemoryPool} created with an export handle
     *       ({@link MemoryPoolOptions#withExportHandle}): {@link IpcBufferExport.Kind#POOL_ALLOCATION}
     *       ({@code cuMemPoolExportPointer}); the pool must have been exported first
     *       ({@link MemoryPool#exportFileDescriptor()}), since the driver exports no allocation
     *       of a pool before that, and the other process needs the pool too.
     * </ul>
     *
     * <p>The exporter keeps this buffer open until every importer has closed its import (the
     * driver leaves a free before the importers' unmap undefined, and requires importers of a
     * pool allocation to free first), and orders its writes before the importers' reads (an
     * {@linkplain CudaContext#createInterprocessEvent interprocess event}). Closing a pooled
     * block early would also let the device pool hand it to another allocation of this process
     * while an importer still sees it.
     *
     * @return what the other process needs to import this buffer, of one of the two kinds above
     * @throws IllegalStateException when the buffer is closed, empty, imported (the owning
     *     process exports it), borrowed from another library, a view of a growable buffer or a
     *     range of a capture arena, a graph allocation ({@link #isGraphAllocation()}), or a stream-ordered allocation from the device's default pool
     *     ({@link Stream#allocate}) or from a pool created without an export handle: the message
     *     says how to allocate a buffer that can be shared; or an allocation of a pool not
     *     exported yet: the message says to call {@link MemoryPool#exportFileDescriptor()} first
     * @throws CudaException e.g. {@code CUDA_ERROR_NOT_SUPPORTED} where the platform has no IPC
     */
    public IpcBufferExport exportForIpc() {
        checkOpen();
        DeviceMemory m = memory;
        return switch (m) {
            case PooledBlock b -> new IpcBufferExport(IpcBufferExport.Kind.MEMORY_HANDLE,
                    m.context().calls().ipc().memoryHandle(b.address()), b.size());
            case PoolAllocation p -> exportPoolAllocation(p);
            case StreamOrdered s -> throw notShareable(s, "the device's default pool");
            case EmptyMemory e -> throw new IllegalStateException(e.identity() + " is empty: a 0-byte buffer has no "
                    + "allocation to share; export a buffer of at least 1 byte");
            case ImportedMemory i -> throw imported(i);
            case Borrowed b -> throw new IllegalStateException(b.identity() + " is another library's memory: export it "
                    + "from that library, or copy the bytes to share into a buffer from CudaContext.allocate");
            case GraphAllocation g -> throw new IllegalStateException(g.identity() + " is a graph allocation, whose "
                    + "memory its graph's launches allocate and free; copy the bytes to share into a buffer from "
                    + "CudaContext.allocate and export that");
            case GrowableView v -> throw new IllegalStateException(v.identity() + " is a view of a growable buffer, "
                    + "whose chunks have no export handle; copy the bytes to share into a buffer from "
                    + "CudaContext.allocate and export that");
            case ArenaBlock a -> throw new IllegalStateException(a.identity() + " is a capture arena's range, which "
                    + "other graphs of the arena overwrite; copy the bytes to share into a buffer from "
                    + "CudaContext.allocate and export that");
        };
    }

    private IpcBufferExport exportPoolAllocation(PoolAllocation p) {
        PoolMemory pool = p.pool();
        if (pool.exportHandle() == PoolExportHandle.NONE) {
            throw notShareable(p, "a pool created without an export handle");
        }
        if (!pool.exported()) {
            // The driver refuses cuMemPoolExportPointer (CUDA_ERROR_INVALID_VALUE) until the pool
            // itself was exported. Exporting it here would make a descriptor nobody closes.
            throw new IllegalStateException(p.identity() + " cannot be exported before its pool: call "
                    + "MemoryPool.exportFileDescriptor() first and send the descriptor to the importing process, "
                    + "which imports the pool (MemoryPool.importFrom) before this allocation");
        }
        return new IpcBufferExport(IpcBufferExport.Kind.POOL_ALLOCATION,
                p.context().calls().pools().exportPointer(p.address()), p.size());
    }

    private static IllegalStateException notShareable(DeviceMemory m, String from) {
        return new IllegalStateException(m.identity() + " is a stream-ordered allocation from " + from + ", which "
                + "cannot be shared; allocate the buffer to share with CudaContext.allocate, or from a MemoryPool "
                + "created with MemoryPoolOptions.withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR)");
    }

    private static IllegalStateException imported(DeviceMemory m) {
        return new IllegalStateException(m.identity() + " was imported from another process: export it from the "
                + "process that allocated it");
    }

    /**
     * {@return size in bytes}
     *
     * @throws IllegalStateException when closed
     */
    public long byteSize() {
        checkOpen();
        return memory.size();
    }

    /**
     * {@return whether this buffer is {@linkplain LiveOwner#borrowed() borrowed}: memory Gatun did not
     * allocate and never frees, another library's ({@link DeviceBuffer#borrow}) or
     * another process's ({@link DeviceBuffer#importFrom}, {@link MemoryPool#importAllocation})}
     * Closing it releases only Gatun's view, or this process's mapping of an import.
     */
    public boolean isBorrowed() {
        return memory.borrowed();
    }

    /**
     * {@return the device address ({@code CUdeviceptr}), for interop and kernel arguments} Valid while
     * this buffer is open: Gatun frees its own memory once closed and its queued work is done,
     * so other code must not free it, nor use it after {@link #close()}.
     *
     * @throws IllegalStateException when closed
     */
    public long address() {
        checkOpen();
        return memory.address();
    }

    /** {@return the whole buffer as bytes} */
    public DeviceView bytes() {
        return as(ElementType.BYTE);
    }

    /**
     * The whole buffer as elements of {@code type}; its size must be a whole number of them.
     *
     * @param type the element type the view reads the bytes as
     * @return a view of the whole buffer
     */
    public DeviceView as(ElementType type) {
        checkOpen();
        long size = memory.size();
        if (size % type.byteSize() != 0) {
            throw new IllegalArgumentException(size + " bytes are not a whole number of " + type + " elements");
        }
        return new DeviceView(this, 0, size, type);
    }

    /** {@return the whole buffer as {@link ElementType#FLOAT} elements}; its size must be a multiple of 4 bytes. */
    public DeviceView asFloats() {
        return as(ElementType.FLOAT);
    }

    /** {@return the whole buffer as {@link ElementType#INT} elements}; its size must be a multiple of 4 bytes. */
    public DeviceView asInts() {
        return as(ElementType.INT);
    }

    /** {@return the whole buffer as {@link ElementType#LONG} elements}; its size must be a multiple of 8 bytes. */
    public DeviceView asLongs() {
        return as(ElementType.LONG);
    }

    /** {@return the whole buffer as {@link ElementType#DOUBLE} elements}; its size must be a multiple of 8 bytes. */
    public DeviceView asDoubles() {
        return as(ElementType.DOUBLE);
    }

    /**
     * Checks that this buffer is open and belongs to {@code user}, then records use on
     * {@code stream} (under its lock), refused if this buffer was closed meanwhile
     * ({@link DeviceMemory#usedBy}).
     */
    void useOn(CudaContext user, StreamState stream) {
        checkOpen();
        if (user.state() != memory.context()) {
            user.checkSame(context(), memory);
        }
        checkGraphMemory(stream);
        memory.usedBy(this, stream);
    }

    /**
     * Records use on a stream of {@code user} for a peer operation (under the stream's lock): the
     * buffer may belong to another device's context of the same driver.
     */
    void useOnPeer(CudaContext user, StreamState stream) {
        checkOpen();
        if (user.state() != memory.context()) { // on the launch path: no message is built unless it fails
            user.checkSameDriver(context(), memory.identity());
        }
        checkGraphMemory(stream);
        memory.usedBy(this, stream);
    }

    /** For a graph allocation: refuses work on {@code stream} that cannot reach its memory (see {@code GraphAllocations}). */
    private void checkGraphMemory(StreamState stream) {
        if (memory instanceof GraphAllocation g) {
            g.checkUsableOn(stream, g);
        }
    }

    /**
     * Refuses a synchronous host operation ({@code operation}) on a graph allocation whose memory
     * does not exist yet: inside its capture, or before its graph was launched.
     */
    void checkSynchronous(String operation) {
        if (memory instanceof GraphAllocation g) {
            g.checkSynchronous(operation, g);
        }
    }

    /** {@return whether this buffer was allocated inside a stream capture: an allocation node of the captured graph} */
    public boolean isGraphAllocation() {
        return memory instanceof GraphAllocation;
    }

    /** The memory: its uses, for synchronous copies ({@code SynchronousCopies}) and captures. */
    DeviceMemory resource() {
        return memory;
    }

    /** {@return whether this buffer has been closed (its memory handed to retirement, or freed)} */
    public boolean isClosed() {
        return !memory.ownedBy(this);
    }

    /**
     * Hands the memory to the context's retirement queue, which frees it once the GPU work queued
     * on every stream that used it has completed (a stream-ordered allocation used on one stream
     * only is freed at once, in that stream's order). Idempotent.
     */
    @Override
    public void close() {
        memory.closeBy(this);
    }

    @Override
    public String toString() {
        return memory.ownedBy(this) ? memory.identity() : memory.closedIdentity();
    }
}
