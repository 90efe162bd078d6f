package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.ForeignCalls;
import java.lang.foreign.MemorySegment;

/**
 * The checks a handle made by another library passes before Gatun wraps it: as much as the
 * driver can tell about it, asked before any other use. A refusal is an
 * {@link IllegalArgumentException} that says which check failed; a handle the driver itself
 * rejects fails with the driver's {@code CudaException}.
 */
public final class ForeignHandles {

    private static final int DEVICE_MEMORY = CudaDriver.CU_MEMORYTYPE_DEVICE();
    /** {@code CU_STREAM_LEGACY} and {@code CU_STREAM_PER_THREAD}: pseudo-handles, not streams of a context. */
    private static final long LEGACY = CudaDriver.CU_STREAM_LEGACY().address();
    private static final long PER_THREAD = CudaDriver.CU_STREAM_PER_THREAD().address();

    private ForeignHandles() {
    }

    /**
     * Checks that {@code stream} is a created stream of {@code context}; returns its priority.
     *
     * @throws IllegalArgumentException for a default-stream pseudo-handle or a stream of another context
     * @throws dev.gatun.cuda.CudaException when the driver rejects the handle
     */
    public static int checkStream(ContextState context, MemorySegment stream) {
        long h = stream.address();
        if (h == 0 || h == LEGACY || h == PER_THREAD) {
            throw new IllegalArgumentException("cannot borrow " + (h == 0 ? "the NULL (legacy default) stream"
                    : h == LEGACY ? "CU_STREAM_LEGACY" : "CU_STREAM_PER_THREAD") + ": it is not a stream Gatun can "
                    + "fence as one queue; borrow a stream created with cuStreamCreate, or use one of Gatun's");
        }
        ForeignCalls calls = context.calls().foreign();
        long owner = calls.streamContext(stream);
        if (owner != context.handle().address()) {
            throw new IllegalArgumentException("stream 0x" + Long.toHexString(h) + " belongs to context 0x"
                    + Long.toHexString(owner) + ", not to device " + context.device() + "'s primary context 0x"
                    + Long.toHexString(context.handle().address()) + "; borrow it into the context it was created in "
                    + "(Cuda.contextOf), or create it in the primary context");
        }
        return calls.streamPriority(stream);
    }

    /**
     * Checks that {@code [address, address + bytes)} is device memory of {@code context} (or of
     * its device, for pool and virtual-memory allocations, which the driver ties to no context)
     * and lies inside one allocation.
     *
     * @throws IllegalArgumentException when it is not, or {@code bytes} is not positive
     * @throws dev.gatun.cuda.CudaException when the driver query fails
     */
    public static void checkDeviceMemory(ContextState context, long address, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("cannot borrow " + bytes + " bytes: borrow at least one");
        }
        if (address == 0) {
            throw new IllegalArgumentException("cannot borrow device memory at address 0");
        }
        if (Long.compareUnsigned(address + bytes, address) < 0) {
            throw new IllegalArgumentException("0x" + Long.toHexString(address) + " + " + bytes + " bytes wraps around "
                    + "the address space");
        }
        String range = bytes + " bytes at 0x" + Long.toHexString(address);
        ForeignCalls.Pointer p = context.calls().foreign().pointer(address);
        if (p.memoryType() != DEVICE_MEMORY) {
            throw new IllegalArgumentException("cannot borrow " + range + ": the driver reports "
                    + (p.memoryType() == 0 ? "no CUDA allocation there" : "memory type " + p.memoryType()
                    + ", not device memory") + "; borrow memory from cuMemAlloc, cuMemAllocAsync or a memory pool");
        }
        boolean ours = p.context() == context.handle().address()
                || p.context() == 0 && p.deviceOrdinal() == context.device();
        if (!ours) {
            throw new IllegalArgumentException("cannot borrow " + range + ": it was allocated on device "
                    + p.deviceOrdinal() + (p.context() == 0 ? "" : " in context 0x" + Long.toHexString(p.context()))
                    + ", not in device " + context.device() + "'s primary context; borrow it into its own device's "
                    + "context (a peer copy moves data between devices)");
        }
        if (Long.compareUnsigned(bytes, bytesFrom(p, address)) > 0) {
            throw new IllegalArgumentException("cannot borrow " + range + ": its allocation spans only "
                    + p.rangeSize() + " bytes from 0x" + Long.toHexString(p.rangeStart()) + "; borrow a range inside it");
        }
    }

    /**
     * Checks that the mapping of another process's memory at {@code base} spans the
     * {@code claimed} bytes that the export bytes named. The importer cannot learn the exported
     * size from the handle itself, and it builds bounds-checked views on the claim: a claim past
     * the mapping would let kernels, async copies and memsets (which the driver does not range
     * check) run past it.
     *
     * @param export what was imported, for the message, e.g. {@code "IpcBufferExport"}
     * @throws IllegalArgumentException when the driver's range from {@code base} is shorter
     * @throws dev.gatun.cuda.CudaException when the driver query fails
     */
    public static void checkMappedSize(ContextState context, long base, long claimed, String export) {
        long mapped = bytesFrom(context.calls().foreign().pointer(base), base);
        if (Long.compareUnsigned(claimed, mapped) > 0) {
            throw new IllegalArgumentException("the " + export + " claims " + claimed + " bytes, but the driver mapped only "
                    + mapped + " bytes at 0x" + Long.toHexString(base) + ": its bytes were forged or corrupted on the way "
                    + "(the import was unmapped); import the bytes the exporter's toBytes() produced, unchanged");
        }
    }

    /** The bytes of {@code p}'s allocation from {@code address} to its end; 0 when {@code address} is outside it. */
    private static long bytesFrom(ForeignCalls.Pointer p, long address) {
        long end = p.rangeStart() + p.rangeSize();
        if (p.rangeSize() == 0 || Long.compareUnsigned(address, p.rangeStart()) < 0
                || Long.compareUnsigned(address, end) >= 0) {
            return 0;
        }
        return end - address;
    }
}
