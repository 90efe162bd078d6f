package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.DriverFeature;
import dev.gatun.cuda.internal.driver.MemoryPoolCalls;
import dev.gatun.cuda.internal.memory.AllocationKind;
import dev.gatun.cuda.internal.memory.PoolMemory;
import dev.gatun.cuda.internal.pool.PoolCaps;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A CUDA memory pool ({@code cuMemPool*}): device memory the driver reserves and hands out in
 * stream order ({@link #allocate(Stream, long)}), reusing what earlier frees returned without a
 * round trip to the device's allocator. Its attributes say how much freed memory it keeps
 * ({@linkplain #setReleaseThresholdBytes release threshold}) and when it may reuse memory across
 * streams ({@link PoolReuse}); {@link #usage()} reports what it reserves and uses.
 *
 * <p>Two kinds: a pool made with {@link CudaContext#createMemoryPool}, which Gatun destroys
 * once it is closed, and the device's default pool ({@link CudaContext#defaultMemoryPool()}),
 * which {@link Stream#allocate} allocates from (unless other code changed the device's current
 * pool) and which lives as long as the process: closing it does nothing, and setting its
 * attributes changes them for every user of the device in this process.
 *
 * <p>A pool created with an {@linkplain MemoryPoolOptions#withExportHandle export handle} can be
 * shared with another process: {@link #exportFileDescriptor()} here,
 * {@link MemoryPool#importFrom} there, then each allocation with
 * {@link DeviceBuffer#exportForIpc()} here and {@link #importAllocation} on the imported pool there. An
 * imported pool cannot allocate (the driver's rule); the imported allocations are borrowed.
 *
 * <p>Closing a pool while allocations from it are open, or closed but not yet freed, is allowed:
 * the pool is destroyed only after every allocation from it has been freed, and after the work
 * queued so far on every stream that allocated from it. Each allocation keeps its pool alive.
 */
public final class MemoryPool extends Owner {

    private static final int RELEASE_THRESHOLD = CudaDriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD();
    private static final int RESERVED_CURRENT = CudaDriver.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT();
    private static final int RESERVED_HIGH = CudaDriver.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH();
    private static final int USED_CURRENT = CudaDriver.CU_MEMPOOL_ATTR_USED_MEM_CURRENT();
    private static final int USED_HIGH = CudaDriver.CU_MEMPOOL_ATTR_USED_MEM_HIGH();

    private final CudaContext context;
    private final ContextState state;
    private final PoolMemory resource;

    private MemoryPool(CudaContext context, MemorySegment handle, boolean deviceDefault, PoolExportHandle exportHandle,
            boolean imported, PoolCaps caps, boolean capByGatun) {
        ContextState state = context.state();
        PoolMemory r = new PoolMemory(state, handle, deviceDefault, exportHandle, imported, caps, capByGatun,
                context.pools());
        super(r);
        this.context = context;
        this.state = state;
        this.resource = r;
    }

    /**
     * A new pool on {@code context}'s device with {@code options} applied. Its hard cap is the
     * driver's {@code maxSize} where the driver has one (CUDA 12.2; older drivers require the
     * field's bytes to be zero), otherwise Gatun's to enforce.
     */
    static MemoryPool create(CudaContext context, MemoryPoolOptions options) {
        MemoryPoolCalls calls = context.state().calls().pools();
        boolean driverCaps = context.state().driver().supports(DriverFeature.POOL_HARD_CAP);
        long maxSize = driverCaps && options.hardCapBytes() != MemoryPoolOptions.NO_CAP ? options.hardCapBytes() : 0;
        MemorySegment handle = calls.create(context.device().ordinal(), options.exportHandle().type, maxSize);
        try {
            if (options.releaseThresholdBytes() != 0) {
                calls.setAttribute64(handle, RELEASE_THRESHOLD, options.releaseThresholdBytes());
            }
            for (PoolReuse policy : PoolReuse.values()) {
                if (!options.reuse().contains(policy)) { // a new pool has every policy on
                    calls.setFlag(handle, policy.attribute, false);
                }
            }
        } catch (RuntimeException e) {
            // No owner holds the pool yet and nothing was allocated from it: destroy it now. The
            // original error is the one reported: a raw destroy never throws, and a failed one
            // only leaks the empty pool.
            calls.destroy(handle);
            throw e;
        }
        return new MemoryPool(context, handle, false, options.exportHandle(), false,
                new PoolCaps(options.hardCapBytes(), options.softLimitBytes()), !driverCaps);
    }

    /**
     * Imports the memory pool another process exported as the POSIX file descriptor {@code fd}
     * ({@link #exportFileDescriptor()}; {@code cuMemPoolImportFromShareableHandle}), a descriptor
     * of this process (received over a Unix socket, or taken with {@code pidfd_getfd}). The
     * imported pool cannot allocate; import the exporter's allocations with
     * {@link #importAllocation}. Gatun does not close {@code fd}; close it once imported. Closing
     * the pool destroys this process's pool object once every allocation imported from it was
     * freed.
     *
     * @param context the context to import the pool into
     * @param fd the descriptor, owned by the caller
     * @return the imported pool, to close when done
     * @throws IllegalArgumentException when {@code fd} is negative
     * @throws CudaException e.g. {@code CUDA_ERROR_INVALID_VALUE} for a descriptor of no exported pool
     */
    public static MemoryPool importFrom(CudaContext context, int fd) {
        if (fd < 0) {
            throw new IllegalArgumentException("file descriptor " + fd + " is negative; pass the descriptor this process "
                    + "received for the exporter's pool");
        }
        context.checkOpen();
        context.state().reap();
        MemorySegment handle = context.state().calls().pools().importFileDescriptor(fd);
        return new MemoryPool(context, handle, false, PoolExportHandle.NONE, true, uncapped(), false);
    }

    /**
     * The view of the device's default pool that {@code context} owns from its creation; it asks
     * the driver for the pool on first use, and destroys nothing.
     */
    static MemoryPool deviceDefault(CudaContext context) {
        return new MemoryPool(context, null, true, PoolExportHandle.NONE, false, uncapped(), false);
    }

    private static PoolCaps uncapped() {
        return new PoolCaps(PoolCaps.NONE, PoolCaps.NONE);
    }

    /** {@return the context this pool belongs to} */
    public CudaContext context() {
        return context;
    }

    /** {@return whether this pool was imported from another process ({@link MemoryPool#importFrom})} */
    public boolean isImported() {
        return resource.imported();
    }

    /** {@return how this pool can be exported to other processes ({@link MemoryPoolOptions#withExportHandle})} */
    public PoolExportHandle exportHandle() {
        return resource.exportHandle();
    }

    /**
     * {@return a new POSIX file descriptor for this pool ({@code cuMemPoolExportToShareableHandle}), for
     * another process's {@link MemoryPool#importFrom}} Call it before exporting any
     * allocation from the pool ({@link DeviceBuffer#exportForIpc()}): the driver refuses to export
     * an allocation of a pool never exported, and Gatun refuses it first. The descriptor is the caller's:
     * pass it to the other process (a descriptor is not a number another process can use: send
     * it over a Unix socket with {@code SCM_RIGHTS}, or let the other process take a copy with
     * {@code pidfd_getfd}), and close it when no process needs this copy any more.
     *
     * @throws IllegalStateException when the pool is closed, or was not created with
     *     {@link PoolExportHandle#POSIX_FILE_DESCRIPTOR}, or is imported, or is the device's default pool
     */
    public int exportFileDescriptor() {
        checkOpen();
        if (resource.exportHandle() != PoolExportHandle.POSIX_FILE_DESCRIPTOR) {
            throw new IllegalStateException(resource.identity() + " is not exportable"
                    + (resource.imported() ? ": it was imported; export it from the process that created it"
                    : "; create it with MemoryPoolOptions.withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR)"));
        }
        int fd = state.calls().pools().exportFileDescriptor(resource.handle());
        resource.markExported();
        return fd;
    }

    /**
     * Maps an allocation another process exported from the pool this one imports
     * ({@code cuMemPoolImportPointer}): a borrowed buffer of {@link IpcBufferExport#byteSize()}
     * bytes. Closing it frees the import with {@code cuMemFree} once the work queued here on it
     * completed, which is the order the driver requires (every importer frees before the
     * exporter does); close it, and tell the exporter, before the exporter closes its buffer.
     *
     * @param allocation the export the other process sent, of an allocation from the pool this one imports
     * @return the mapped buffer, to close before the exporter closes its own
     * @throws IllegalArgumentException when {@code allocation} is a legacy memory handle's export,
     *     which {@link DeviceBuffer#importFrom} maps
     * @throws IllegalStateException when this pool is closed or was not imported
     */
    public DeviceBuffer importAllocation(IpcBufferExport allocation) {
        Objects.requireNonNull(allocation, "allocation");
        if (allocation.kind() != IpcBufferExport.Kind.POOL_ALLOCATION) {
            throw new IllegalArgumentException(allocation + " is a CudaContext.allocate buffer's export: map it with "
                    + "DeviceBuffer.importFrom");
        }
        checkOpen();
        if (!resource.imported()) {
            throw new IllegalStateException(resource.identity() + " is not an imported pool; import the exporter's pool "
                    + "with MemoryPool.importFrom(context, fd) and import its allocations there");
        }
        return DeviceBuffer.importFromPool(context, resource, allocation);
    }

    /** {@return whether this is the device's default pool ({@link CudaContext#defaultMemoryPool()})} */
    public boolean isDeviceDefault() {
        return resource.deviceDefault();
    }

    /**
     * Allocates {@code bytes} from this pool in {@code stream}'s order
     * ({@code cuMemAllocFromPoolAsync}): usable by work queued on {@code stream} after this call
     * (other streams must wait on a fence first). Not initialized. Closing the buffer frees it in
     * stream order on the last stream that used it, as for {@link Stream#allocate}. A request of
     * 0 bytes gives a 0-byte buffer with no native allocation.
     *
     * @param stream the stream whose order the allocation follows
     * @param bytes how many bytes to allocate; 0 or more
     * @return the new buffer, to close when done
     * @throws IllegalStateException when this pool or the stream is closed, or a Gatun capture is
     *     open on the stream (allocate with {@link Stream#allocate} inside a capture: a graph
     *     allocation)
     * @throws IllegalArgumentException when {@code bytes} is negative or the stream belongs to another context
     * @throws CudaException e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public DeviceBuffer allocate(Stream stream, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate a negative size: " + bytes);
        }
        resource.checkOpen();
        if (resource.imported()) {
            throw new IllegalStateException(resource.identity() + " was imported from another process and cannot allocate "
                    + "(the driver's rule); allocate in the exporting process and import the allocation with importAllocation");
        }
        StreamState s = stream.openState();
        if (stream.context() != context) {
            context.checkSame(stream.context(), "the stream");
        }
        try {
            return allocateOnce(stream, s, bytes);
        } catch (CudaException e) {
            // Out of the stream's lock: the ladder retires and synchronizes, then the whole
            // locked allocation runs again.
            return context.ladder().retry(e, AllocationKind.POOL, bytes, () -> allocateOnce(stream, s, bytes));
        }
    }

    private DeviceBuffer allocateOnce(Stream stream, StreamState s, long bytes) {
        synchronized (s.lock()) { // no capture begins between the check and the allocation
            s.checkOpen();
            if (bytes == 0) {
                return DeviceBuffer.allocateAsync(context, s, 0);
            }
            if (s.queuesIntoCapture()) { // the driver is asked only while a capture is possible
                throw new IllegalStateException("cannot allocate from " + resource.identity() + " on " + stream
                        + ", which is capturing a graph: an allocation inside a capture is an allocation node of the "
                        + "graph, which Gatun makes only from the device's graph memory. Allocate it with "
                        + "stream.allocate(bytes) on the stream a Gatun capture was begun on, or from this pool before "
                        + "the capture begins");
            }
            return DeviceBuffer.allocateFromPool(context, s, resource, bytes);
        }
    }

    /**
     * {@return bytes of freed memory the pool keeps reserved across synchronizations
     * ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD})}
     */
    public long releaseThresholdBytes() {
        checkOpen();
        return state.calls().pools().attribute64(resource.handle(), RELEASE_THRESHOLD);
    }

    /**
     * Sets how many bytes of freed memory the pool keeps reserved when a stream, event or context
     * synchronizes, instead of returning them to the device. 0 (the driver's default) returns
     * everything; {@link Long#MAX_VALUE} keeps everything until {@link #trimTo}.
     *
     * @param bytes the bytes to keep reserved; 0 or more
     */
    public void setReleaseThresholdBytes(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("release threshold " + bytes
                    + " is negative; give a number of bytes >= 0 (Long.MAX_VALUE keeps every freed byte reserved)");
        }
        checkOpen();
        state.calls().pools().setAttribute64(resource.handle(), RELEASE_THRESHOLD, bytes);
    }

    /**
     * {@return whether the reuse policy {@code policy} is on}
     *
     * @param policy the policy to ask about
     */
    public boolean isReuseEnabled(PoolReuse policy) {
        Objects.requireNonNull(policy, "policy");
        checkOpen();
        return state.calls().pools().flag(resource.handle(), policy.attribute);
    }

    /**
     * Switches the reuse policy {@code policy} on or off, for allocations from now on.
     *
     * @param policy the policy to switch
     * @param on true to switch it on, false to switch it off
     */
    public void setReuseEnabled(PoolReuse policy, boolean on) {
        Objects.requireNonNull(policy, "policy");
        checkOpen();
        state.calls().pools().setFlag(resource.handle(), policy.attribute, on);
    }

    /**
     * Returns reserved memory the pool does not use to the device, keeping at least
     * {@code keepBytes} reserved ({@code cuMemPoolTrimTo}). Memory of live allocations, and of
     * frees still queued, is never released: close buffers and synchronize their streams first.
     *
     * @param keepBytes the least the pool keeps reserved, in bytes
     */
    public void trimTo(long keepBytes) {
        if (keepBytes < 0) {
            throw new IllegalArgumentException("cannot keep a negative number of bytes: " + keepBytes + "; 0 releases all it can");
        }
        checkOpen();
        state.calls().pools().trimTo(resource.handle(), keepBytes);
    }

    /**
     * {@return the pool's used and reserved memory, now and at their peaks, as the driver counts it (four
     * driver calls)}
     */
    public MemoryUsage usage() {
        checkOpen();
        MemoryPoolCalls calls = state.calls().pools();
        MemorySegment h = resource.handle();
        return new MemoryUsage(calls.attribute64(h, USED_CURRENT), calls.attribute64(h, USED_HIGH),
                calls.attribute64(h, RESERVED_CURRENT), calls.attribute64(h, RESERVED_HIGH));
    }

    /** Resets both peaks to the current values (the driver's reset: setting its high-water marks to 0). */
    public void resetPeaks() {
        checkOpen();
        MemoryPoolCalls calls = state.calls().pools();
        calls.setAttribute64(resource.handle(), RESERVED_HIGH, 0);
        calls.setAttribute64(resource.handle(), USED_HIGH, 0);
    }

    /**
     * Sets how {@code peer}'s device may access this pool's memory, for its allocations now and
     * later ({@code cuMemPoolSetAccess}). Kernels and copies on {@code peer} may then use buffers
     * from this pool directly; no {@link CudaContext#enablePeerAccess} is needed for them.
     *
     * <p>On an {@linkplain #isImported imported} pool this may name its own context: access to an
     * imported pool is the importing process's to set.
     *
     * @param peer the context whose device gets the access
     * @param access the access it gets; {@link MemoryAccess#NONE} takes it away
     * @throws IllegalArgumentException when {@code peer} is this pool's own context (its device
     *     always has read-write access) and the pool is not imported, belongs to another Cuda, or its device cannot access
     *     this one's memory
     */
    public void setAccess(CudaContext peer, MemoryAccess access) {
        Objects.requireNonNull(access, "access");
        checkOpen();
        peer.checkOpen();
        context.checkSameDriver(peer, "the peer context");
        if (peer == context && !resource.imported()) {
            // An imported pool's access is set per importing process, its own device included.
            throw new IllegalArgumentException("device " + context.device().ordinal() + " always has read-write access "
                    + "to its own pool; set access for other devices' contexts");
        }
        if (peer != context && !peer.device().canAccessPeer(context.device())) {
            throw new IllegalArgumentException("device " + peer.device().ordinal() + " cannot access device "
                    + context.device().ordinal() + "'s memory (cuDeviceCanAccessPeer is 0); copy between them instead");
        }
        state.calls().pools().setAccess(resource.handle(), peer.device().ordinal(), access.flags);
    }

    /**
     * How {@code peer}'s device may access this pool's memory ({@code cuMemPoolGetAccess}); its own context's is
     * {@link MemoryAccess#READ_WRITE}.
     *
     * @param peer the context whose device's access is asked for
     * @return that device's access to this pool's memory
     */
    public MemoryAccess access(CudaContext peer) {
        checkOpen();
        peer.checkOpen();
        context.checkSameDriver(peer, "the peer context");
        return MemoryAccess.of(state.calls().pools().access(resource.handle(), peer.device().ordinal()));
    }

    /** {@return what Gatun counted for this pool: allocations, frees, live bytes} */
    public MemoryPoolCounters counters() {
        return resource.counters();
    }

    /**
     * Closes the pool: no more allocations from it. It is destroyed once every allocation from
     * it has been freed and the work queued on the streams that allocated from it has completed.
     * Closing the device's default pool does nothing.
     */
    @Override
    public void close() {
        if (!resource.deviceDefault()) {
            super.close();
        }
    }

    /** Retires the context's view of the default pool at context shutdown (the pool itself stays the driver's). */
    void retire() {
        super.close();
    }

    private void checkOpen() {
        context.checkOpen();
        resource.checkOpen();
    }
}
