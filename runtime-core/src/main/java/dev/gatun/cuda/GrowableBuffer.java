package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.VirtualMemoryCalls;
import dev.gatun.cuda.internal.memory.AllocationKind;
import dev.gatun.cuda.internal.memory.GrowableView;
import dev.gatun.cuda.internal.memory.VmmReservation;
import dev.gatun.cuda.internal.transfer.SynchronousCopies;
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
 * <p>{@link #mapped()} is the usable range [0, {@link #byteSize()}) as a {@link DeviceBuffer}: copies,
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
    private static final int NOT_SUPPORTED = CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private final CudaContext context;
    private final ContextState state;
    private final VmmReservation resource;
    /** The buffer of the newest view, which {@link #mapped()} returns again while the size stays (guarded by the resource's lock). */
    private DeviceBuffer newestView;

    private GrowableBuffer(CudaContext context, VmmReservation resource) {
        super(resource);
        this.context = context;
        this.state = context.state();
        this.resource = resource;
    }

    /** Checks that the device supports virtual memory, then reserves the range {@code options} ask for. */
    static GrowableBuffer reserve(CudaContext context, GrowableBufferOptions options) {
        Device device = context.device();
        if (device.attribute(DeviceAttribute.VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
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
        return new GrowableBuffer(context, new VmmReservation(state, base, bytes, chunk, device.ordinal()));
    }

    private static long roundUp(long bytes, long unit) {
        long r = (bytes + unit - 1) / unit * unit;
        return r < bytes ? Long.MAX_VALUE / unit * unit : r; // no overflow past the largest whole number of units
    }

    /** {@return the context this buffer's memory belongs to} */
    public CudaContext context() {
        return context;
    }

    /** {@return the first byte of the reserved range ({@code CUdeviceptr}); the same for the buffer's whole life} */
    public long baseAddress() {
        resource.checkOpen();
        return resource.base();
    }

    /**
     * {@return the bytes usable now, as {@link #grow} and {@link #shrink} set them: [0, byteSize) is mapped}
     * The memory mapped for them is whole chunks ({@link GrowableBufferCounters#mappedBytes()}).
     */
    public long byteSize() {
        synchronized (resource.lock()) {
            return resource.size();
        }
    }

    /** {@return the reserved maximum: the most {@link #grow} can reach} */
    public long reservedBytes() {
        return resource.reservedBytes();
    }

    /** {@return the size of each physical chunk; growth maps, and shrinking unmaps, whole chunks} */
    public long chunkBytes() {
        return resource.chunkBytes();
    }

    /**
     * Grows the usable range to {@code newSize} bytes, mapping the chunks it needs
     * ({@code cuMemCreate}, {@code cuMemMap}, then {@code cuMemSetAccess} for this context's
     * device). The new bytes are not initialized; the base address and existing bytes stay.
     * Nothing changes when {@code newSize} is the current size, or falls inside the chunks mapped.
     *
     * @param newSize the usable size asked for, in bytes
     * @throws ReservationExceededException when {@code newSize} exceeds {@link #reservedBytes()}
     * @throws IllegalArgumentException when {@code newSize} is below the current size (use {@link #shrink})
     * @throws OutOfDeviceMemoryException when the chunks do not fit even after the out-of-memory
     *     ladder; the chunks this call mapped are unmapped and released again, and the buffer keeps
     *     its size and mappings (as after any other {@link CudaException})
     * @throws CaptureActiveException when a global capture on this context stays active past the gate timeout
     */
    public void grow(long newSize) {
        try {
            growOnce(newSize);
        } catch (CudaException e) {
            // Out of memory, the growth rolled back: the ladder climbs outside this buffer's lock
            // (it waits for retirement, whose frees may need it), then the whole growth runs again.
            context.ladder().retry(e, AllocationKind.GROWABLE, newSize, () -> {
                growOnce(newSize);
                return null;
            });
        }
    }

    private void growOnce(long newSize) {
        synchronized (resource.lock()) {
            checkOpen();
            long size = resource.size();
            if (newSize < size) {
                throw new IllegalArgumentException(resource.identity() + " is " + size + " bytes; cannot grow it to "
                        + newSize + " (shrink it instead)");
            }
            if (newSize > resource.reservedBytes()) {
                throw new ReservationExceededException(resource.identity(), newSize, resource.reservedBytes());
            }
            if (resource.needsChunksFor(newSize)) {
                state.calls().live(GROW);
                state.reap();
                resource.mapFor(newSize, GROW);
            }
            resource.resize(newSize);
        }
    }

    /**
     * Shrinks the usable range to {@code newSize} bytes, unmapping and releasing the chunks past
     * it. Synchronous: it first waits for all work already queued on this context's streams, and
     * for other devices' work on its views, since any of it may touch the chunks unmapped. Views
     * that end past {@code newSize} are closed; the bytes below it stay as they are.
     *
     * @param newSize the usable size to keep, in bytes
     * @throws IllegalArgumentException when {@code newSize} is negative or above the current size
     * @throws IllegalStateException when a captured graph holds a view that ends past {@code newSize}
     *     (nothing is unmapped then)
     * @throws CaptureActiveException on a thread capturing in global mode, or when a global
     *     capture stays active past the gate timeout
     */
    public void shrink(long newSize) {
        synchronized (resource.lock()) {
            checkOpen();
            long size = resource.size();
            if (newSize < 0 || newSize > size) {
                throw new IllegalArgumentException(resource.identity() + " is " + size + " bytes; cannot shrink it to "
                        + newSize + " (grow it instead, or give 0 .. " + size + ")");
            }
            boolean unmaps = resource.unmapsBelow(newSize);
            if (unmaps) { // refused before anything changes
                state.calls().live(SHRINK);
                state.ordering().refuseDuringOwnCapture(SHRINK);
            }
            List<GrowableView> revoked = resource.revokeViewsPast(newSize);
            resource.resize(newSize);
            if (unmaps) {
                SynchronousCopies copies = context.copies();
                StreamState copy = copies.enterSynchronous(SHRINK, resource, null);
                for (GrowableView v : revoked) {
                    v.orderAfterForeignUses(copy);
                }
                copies.synchronize(copy);
                resource.unmapPast(newSize, SHRINK);
            }
        }
        state.reap();
    }

    /**
     * {@return the usable range [0, {@link #byteSize()}) as a device buffer, for copies, memsets, kernels and
     * graphs: it stays valid while this buffer grows, and is closed by a {@link #shrink} below its
     * end or by closing this buffer (after which using it throws {@link IllegalStateException})}
     * Closing it ends the view early and frees nothing. Calls at the same size return the same view.
     */
    public DeviceBuffer mapped() {
        synchronized (resource.lock()) {
            checkOpen();
            GrowableView view = resource.viewOfSize();
            if (newestView == null || newestView.resource() != view) {
                newestView = DeviceBuffer.viewOf(view);
            }
            return newestView;
        }
    }

    /**
     * {@return reserved, mapped and high-water bytes, chunks, and the growth and shrink counts} Readable
     * after close.
     */
    public GrowableBufferCounters counters() {
        return resource.counters();
    }

    private void checkOpen() {
        context.checkOpen();
        resource.checkOpen();
    }

    /** The reserved range, for a {@link CaptureArena} built on this buffer. */
    VmmReservation reservation() {
        return resource;
    }
}
