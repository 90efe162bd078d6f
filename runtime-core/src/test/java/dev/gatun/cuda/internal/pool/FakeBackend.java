package dev.gatun.cuda.internal.pool;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A device with a capacity, standing in for the driver: it hands out distinct addresses, runs
 * out of memory when the live bytes would pass its capacity, and records every misuse (freeing
 * an unknown address, or with another size than allocated) for the test to assert on.
 */
final class FakeBackend implements PoolBackend {

    static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();
    static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private final long capacity;
    private final Map<Long, Long> live = new HashMap<>();
    private final List<String> misuse = new ArrayList<>();
    private long nextAddress = 0x7f00_0000_0000L;
    private long liveBytes;
    private int allocateCalls;
    private int freeCalls;
    private int failNextAllocations;
    private int failAllocationsWith = OUT_OF_MEMORY;
    private int freeResult;
    private RuntimeException freeThrows;

    FakeBackend() {
        this(Long.MAX_VALUE);
    }

    FakeBackend(long capacity) {
        this.capacity = capacity;
    }

    /** Makes the next {@code n} allocations fail with {@code result}, whatever the free capacity. */
    synchronized void failNextAllocations(int n, int result) {
        failNextAllocations = n;
        failAllocationsWith = result;
    }

    /** What {@link #free} returns from now on; nonzero keeps the block allocated. */
    synchronized void freeResult(int result) {
        freeResult = result;
    }

    /** Makes {@link #free} throw {@code e} without freeing, from now on; null to stop. */
    synchronized void freeThrows(RuntimeException e) {
        freeThrows = e;
    }

    @Override
    public synchronized long allocate(long bytes) {
        allocateCalls++;
        if (failNextAllocations > 0) {
            failNextAllocations--;
            throw error(failAllocationsWith, bytes);
        }
        if (bytes > capacity - liveBytes) {
            throw error(OUT_OF_MEMORY, bytes);
        }
        long address = nextAddress;
        nextAddress += bytes;
        live.put(address, bytes);
        liveBytes += bytes;
        return address;
    }

    @Override
    public synchronized int free(long address, long bytes) {
        freeCalls++;
        if (freeThrows != null) {
            throw freeThrows;
        }
        Long size = live.get(address);
        if (size == null) {
            misuse.add("free of unknown address 0x" + Long.toHexString(address));
            return INVALID_VALUE;
        }
        if (size != bytes) {
            misuse.add("free of 0x" + Long.toHexString(address) + " as " + bytes + " bytes, allocated as " + size);
        }
        if (freeResult != 0) {
            return freeResult;
        }
        live.remove(address);
        liveBytes -= size;
        return 0;
    }

    private static CudaException error(int result, long bytes) {
        return new CudaException(result, result == OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUresult " + result,
                "fake", "cuMemAlloc(" + bytes + " bytes)", 0);
    }

    /** The size {@code address} was allocated with, or -1 when it is not live. */
    synchronized long sizeOf(long address) {
        return live.getOrDefault(address, -1L);
    }

    synchronized long liveBytes() {
        return liveBytes;
    }

    synchronized int liveBlocks() {
        return live.size();
    }

    synchronized int allocateCalls() {
        return allocateCalls;
    }

    synchronized int freeCalls() {
        return freeCalls;
    }

    synchronized List<String> misuse() {
        return List.copyOf(misuse);
    }
}
