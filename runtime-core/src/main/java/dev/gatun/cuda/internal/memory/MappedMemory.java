package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
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
    private final HostView view;

    private MappedMemory(ContextState context, long host, long device) {
        super(context, OwnerKind.PINNED_BUFFER);
        this.host = host;
        this.device = device;
        this.view = new HostView(host, BYTES); // cuMemHostAlloc returned BYTES bytes there
        view.segment().set(ValueLayout.JAVA_LONG, 0, 0L); // the driver does not clear what it allocates
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
        return view.segment();
    }

    /** The word's device address, for kernels and stream memory operations. */
    public long deviceAddress() {
        return device;
    }

    @Override
    protected void beforeRetire() {
        view.close();
    }

    @Override
    protected Retirement.Release howToFree() {
        // The fences of every stream that wrote or waited on it completed, and no view reaches it.
        return view.release(() -> context.calls().memory().freeHost(host));
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
