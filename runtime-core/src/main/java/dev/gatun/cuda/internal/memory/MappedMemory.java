package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One 8-byte word of page-locked host memory mapped into the device's address space
 * ({@code cuMemHostAlloc} with {@code DEVICEMAP | PORTABLE}), behind a {@code MappedWord}: the
 * GPU writes it (a kernel, a stream write of a value) and the host reads it, or the other way
 * round. Its free waits for the fence of every stream that used it, and its host view is closed
 * first, so no Java code can reach the memory once it is freed. Counted as a pinned buffer.
 */
public final class MappedMemory extends NativeResource {

    /** The word's size, and its alignment (cuMemHostAlloc returns page-aligned memory). */
    public static final int BYTES = 8;
    private static final String HOST_ALLOC = "cuMemHostAlloc";

    private final long host;
    private final long device;
    private final Arena views = Arena.ofShared();
    private final MemorySegment view;
    /** False if the view could not be closed (another thread was inside a read of it). */
    private boolean viewsClosed;

    private MappedMemory(ContextState context, long host, long device) {
        super(context, OwnerKind.PINNED_BUFFER);
        this.host = host;
        this.device = device;
        // Safety: cuMemHostAlloc returned BYTES bytes at `host`; the view's arena is closed before
        // the memory is freed, so the view can never reach freed memory.
        this.view = MemorySegment.ofAddress(host).reinterpret(BYTES, views, null);
        view.set(ValueLayout.JAVA_LONG, 0, 0L); // the driver does not clear what it allocates
    }

    /** A new mapped word of {@code context}, set to 0. */
    public static MappedMemory allocate(ContextState context) {
        context.calls().live(HOST_ALLOC);
        // Pinned allocation and free may synchronize: gate them.
        try (var _ = context.enterSection(HOST_ALLOC)) {
            long host = context.calls().memOps().allocateMapped(BYTES);
            try {
                return new MappedMemory(context, host, context.calls().memOps().devicePointer(host));
            } catch (CudaException e) {
                // Nothing used it yet (the context is current since the allocation): free it, and
                // report the failure that matters; a failed free only logs through retirement's rules.
                context.calls().memory().freeHost(host);
                throw e;
            }
        }
    }

    /** The host view of the word (closed when the word is retired). */
    public MemorySegment view() {
        return view;
    }

    /** The word's device address, for kernels and stream memory operations. */
    public long deviceAddress() {
        return device;
    }

    @Override
    protected void beforeRetire() {
        try {
            views.close();
            viewsClosed = true;
        } catch (IllegalStateException inUse) {
            // Another thread is inside a read of the view: freeing the memory could let it read
            // freed memory, so the word is leaked instead.
            viewsClosed = false;
        }
    }

    @Override
    protected Retirement.Release howToFree() {
        if (!viewsClosed) {
            return () -> CudaDriver.CUDA_ERROR_INVALID_VALUE(); // abandoned by the queue, with a log line
        }
        // The fences of every stream that wrote or waited on it completed, and no view reaches it.
        return () -> context.calls().memory().freeHost(host);
    }

    @Override
    protected boolean synchronizingFree() {
        return true;
    }

    @Override
    public String identity() {
        return "MappedWord#" + id() + " (device " + context.device() + ")";
    }
}
