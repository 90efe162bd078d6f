package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUmemLocation;
import dev.gatun.cuda.bindings.driver.CUmemcpyAttributes;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The simulated driver's pointer-to-pointer copies: {@code cuMemcpyBatchAsync_v2} (CUDA 13.0) and
 * {@code cuMemcpyAsync}. Strict: the batch validates its counts, every attribute and every range
 * before it queues anything, and queues the whole batch as one operation; each range must lie in
 * one live device allocation or one live pinned host allocation (Gatun never passes pageable
 * memory, so the simulation refuses it, where the driver would take it). A driver older than
 * 13.0, or one made {@linkplain FakeDriverApi#withoutSymbol without} the symbol, has no batch
 * entry point: a call to it throws DriverTooOldException ({@link SimulatedDevices#bind}), as the
 * first call of a missing function does.
 */
final class SimulatedBatchCopies {

    private static final int ORDER_STREAM = CudaDriver.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM();
    private static final int ORDER_ANY = CudaDriver.CU_MEMCPY_SRC_ACCESS_ORDER_ANY();
    private static final int KNOWN_FLAGS = CudaDriver.CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE();
    private static final long ATTRIBUTE_BYTES = CUmemcpyAttributes.sizeof();

    private final FakeDriverApi gpu;
    int batchCalls;
    int singleCalls;

    SimulatedBatchCopies(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuMemcpyBatchAsync_v2(MemorySegment dsts, MemorySegment srcs, MemorySegment sizes, long count,
            MemorySegment attrs, MemorySegment attrsIdxs, long numAttrs, MemorySegment stream) {
        batchCalls++;
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) { // no graph node for a batch
            SimulatedStreams.invalidate(s);
            return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED();
        }
        if (count <= 0 || numAttrs <= 0 || numAttrs > count || !validAttributes(attrs, attrsIdxs, numAttrs, count)) {
            return INVALID_VALUE;
        }
        MemorySegment to = dsts.reinterpret(8 * count);
        MemorySegment from = srcs.reinterpret(8 * count);
        MemorySegment n = sizes.reinterpret(8 * count);
        List<Runnable> copies = new ArrayList<>();
        Set<Long> deviceUses = new HashSet<>();
        Set<Long> hostUses = new HashSet<>();
        for (int i = 0; i < count; i++) {
            Runnable copy = copy(to.getAtIndex(ValueLayout.JAVA_LONG, i), from.getAtIndex(ValueLayout.JAVA_LONG, i),
                    n.getAtIndex(ValueLayout.JAVA_LONG, i), deviceUses, hostUses);
            if (copy == null) {
                return INVALID_VALUE; // nothing queued: the batch is validated as a whole
            }
            copies.add(copy);
        }
        gpu.streams.enqueue(s, () -> copies.forEach(Runnable::run), deviceUses, hostUses);
        return SUCCESS;
    }

    public int cuMemcpyAsync(long dst, long src, long bytes, MemorySegment stream) {
        singleCalls++;
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        Set<Long> deviceUses = new HashSet<>();
        Set<Long> hostUses = new HashSet<>();
        Runnable copy = copy(dst, src, bytes, deviceUses, hostUses);
        if (copy == null) {
            return INVALID_VALUE;
        }
        gpu.streams.enqueue(s, copy, deviceUses, hostUses);
        return SUCCESS;
    }

    /**
     * Every attribute valid (a known source order, known flags, no location hint) and the
     * starts 0, strictly increasing and below {@code count}.
     */
    private static boolean validAttributes(MemorySegment attrs, MemorySegment attrsIdxs, long numAttrs, long count) {
        MemorySegment all = attrs.reinterpret(ATTRIBUTE_BYTES * numAttrs);
        MemorySegment starts = attrsIdxs.reinterpret(8 * numAttrs);
        for (int k = 0; k < numAttrs; k++) {
            MemorySegment a = all.asSlice(ATTRIBUTE_BYTES * k, ATTRIBUTE_BYTES);
            int order = CUmemcpyAttributes.srcAccessOrder(a);
            if (order < ORDER_STREAM || order > ORDER_ANY || (CUmemcpyAttributes.flags(a) & ~KNOWN_FLAGS) != 0
                    || CUmemLocation.type(CUmemcpyAttributes.srcLocHint(a)) != 0
                    || CUmemLocation.type(CUmemcpyAttributes.dstLocHint(a)) != 0) {
                return false;
            }
            long start = starts.getAtIndex(ValueLayout.JAVA_LONG, k);
            long previous = k == 0 ? -1 : starts.getAtIndex(ValueLayout.JAVA_LONG, k - 1);
            if ((k == 0 && start != 0) || start <= previous || start >= count) {
                return false;
            }
        }
        return true;
    }

    /** One copy between device or pinned ranges, noting what it touches; null when a range is not one of those, or bytes is not positive. */
    private Runnable copy(long dst, long src, long bytes, Set<Long> deviceUses, Set<Long> hostUses) {
        if (bytes <= 0) {
            return null;
        }
        MemorySegment to = range(dst, bytes, deviceUses, hostUses);
        MemorySegment from = range(src, bytes, deviceUses, hostUses);
        if (to == null || from == null) {
            return null;
        }
        return () -> MemorySegment.copy(from, 0, to, 0, bytes);
    }

    private MemorySegment range(long address, long bytes, Set<Long> deviceUses, Set<Long> hostUses) {
        MemorySegment device = gpu.memory.resolve(address, bytes);
        if (device != null) {
            deviceUses.addAll(gpu.memory.uses(address, bytes));
            return device;
        }
        MemorySegment host = gpu.memory.resolvePinned(address, bytes);
        if (host != null) {
            hostUses.addAll(gpu.memory.hostUse(address));
        }
        return host;
    }
}
