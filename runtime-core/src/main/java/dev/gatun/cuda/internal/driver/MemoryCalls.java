package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.MemoryInfo;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, memory: allocation and free (synchronous, stream-ordered and page-locked host),
 * asynchronous copies and memsets, and the device's free memory. Each call names its operation
 * once, owns its out-parameters and checks its result. Device ranges are checked by the
 * callers (views); a copy or memset never sees a range outside an open allocation. With Gatun's
 * NVTX ranges on, each asynchronous copy and memset is a range named by its kind, with its bytes.
 */
public final class MemoryCalls {

    private static final String ALLOC = "cuMemAlloc";
    private static final String FREE = "cuMemFree";
    private static final String ALLOC_ASYNC = "cuMemAllocAsync";
    private static final String FREE_ASYNC = "cuMemFreeAsync";
    private static final String HOST_ALLOC = "cuMemHostAlloc";
    private static final String FREE_HOST = "cuMemFreeHost";
    private static final String HTOD = "cuMemcpyHtoDAsync";
    private static final String DTOH = "cuMemcpyDtoHAsync";
    private static final String DTOD = "cuMemcpyDtoDAsync";
    private static final String PEER = "cuMemcpyPeerAsync";
    private static final String MEMSET8 = "cuMemsetD8Async";
    private static final String MEMSET32 = "cuMemsetD32Async";
    private static final String INFO = "cuMemGetInfo";
    private static final int PORTABLE = CudaDriver.CU_MEMHOSTALLOC_PORTABLE();
    private static final int WRITE_COMBINED = CudaDriver.CU_MEMHOSTALLOC_WRITECOMBINED();

    private final Checked c;

    MemoryCalls(Checked c) {
        this.c = c;
    }

    /** {@code bytes} (more than 0) of device memory ({@code cuMemAlloc}); may synchronize: call it inside the gate. */
    public long allocate(long bytes) {
        c.current(ALLOC);
        MemorySegment out = c.out();
        // Safety: out holds the CUdeviceptr the driver writes; the context is current.
        c.check(c.api.cuMemAlloc_v2(out, bytes), ALLOC);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /**
     * Frees device memory from {@link #allocate}; the raw result, for retirement and the pool
     * (sticky results still poison). Makes the context current first, as it acts on the current one.
     *
     * @param address an allocation no queued or future work uses
     */
    public int free(long address) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the allocation's last use has completed; its context is
        // current on this carrier, made so just now with nothing between that can park.
        return c.observe(c.api.cuMemFree_v2(address), FREE);
    }

    /** {@code bytes} (more than 0) of device memory in {@code stream}'s order ({@code cuMemAllocAsync}). */
    public long allocateAsync(long bytes, MemorySegment stream, OutBlock streamOut) {
        c.live(ALLOC_ASYNC);
        MemorySegment out = streamOut.view;
        // Safety: out holds the CUdeviceptr the driver writes, and no other call uses it meanwhile
        // (the stream's block, under the stream's lock); the caller passes an open stream of this context.
        c.check(c.api.cuMemAllocAsync(out, bytes, stream), ALLOC_ASYNC);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /**
     * Frees device memory in {@code stream}'s order; the raw result, for retirement (sticky
     * results still poison).
     *
     * @param address an allocation whose every use was queued on {@code stream}, or has completed
     */
    public int freeAsync(long address, MemorySegment stream) {
        int refused = c.refusedInsideCallback();
        if (refused != 0) {
            return refused;
        }
        // Safety: the caller's contract: the free follows every use in stream order.
        return c.observe(c.api.cuMemFreeAsync(address, stream), FREE_ASYNC);
    }

    /**
     * Page-locked, portable host memory ({@code cuMemHostAlloc}); may synchronize: call it inside the gate.
     *
     * @return the host address
     */
    public long allocateHost(long bytes, boolean writeCombined) {
        c.current(HOST_ALLOC);
        MemorySegment out = c.out();
        // Safety: out holds the host pointer the driver writes; the context is current.
        c.check(c.api.cuMemHostAlloc(out, bytes, writeCombined ? PORTABLE | WRITE_COMBINED : PORTABLE), HOST_ALLOC);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /**
     * Frees page-locked host memory; the raw result, for retirement (sticky results still
     * poison). Makes the context current first, as it acts on the current one.
     *
     * @param address memory from {@link #allocateHost} that no transfer uses and no Java view reaches
     */
    public int freeHost(long address) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: no DMA or host access can reach the memory any more; the
        // context is current on this carrier, made so just now.
        return c.observe(c.api.cuMemFreeHost(MemorySegment.ofAddress(address)), FREE_HOST);
    }

    /**
     * Queues a copy of {@code bytes} from host to device on {@code stream}.
     *
     * @param host native memory that stays alive and untouched until the copy completes
     */
    public void copyToDevice(long device, MemorySegment host, long bytes, MemorySegment stream) {
        c.live(HTOD);
        c.check(rawCopyToDevice(device, host, bytes, stream), HTOD);
    }

    /** {@link #copyToDevice} with the raw result, for a pinned buffer's transfer state machine (sticky results still poison). */
    public int tryCopyToDevice(long device, MemorySegment host, long bytes, MemorySegment stream) {
        return c.observe(rawCopyToDevice(device, host, bytes, stream), HTOD);
    }

    private int rawCopyToDevice(long device, MemorySegment host, long bytes, MemorySegment stream) {
        // Safety: the caller's contract: the host range is native and outlives the copy, the
        // device range lies inside an open allocation that lists this stream, and the stream is
        // open and of this context.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.COPY_TO_DEVICE, bytes);
        }
        int r = c.api.cuMemcpyHtoDAsync_v2(device, host, bytes, stream);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        return r;
    }

    /**
     * Queues a copy of {@code bytes} from device to host on {@code stream}.
     *
     * @param host native memory that stays alive and unread until the copy completes
     */
    public void copyToHost(MemorySegment host, long device, long bytes, MemorySegment stream) {
        c.live(DTOH);
        c.check(rawCopyToHost(host, device, bytes, stream), DTOH);
    }

    /** {@link #copyToHost} with the raw result, for a pinned buffer's transfer state machine (sticky results still poison). */
    public int tryCopyToHost(MemorySegment host, long device, long bytes, MemorySegment stream) {
        return c.observe(rawCopyToHost(host, device, bytes, stream), DTOH);
    }

    private int rawCopyToHost(MemorySegment host, long device, long bytes, MemorySegment stream) {
        // Safety: as in rawCopyToDevice, with the host range written by the copy.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.COPY_TO_HOST, bytes);
        }
        int r = c.api.cuMemcpyDtoHAsync_v2(host, device, bytes, stream);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        return r;
    }

    /** Queues a device-to-device copy within this context on {@code stream}. */
    public void copyOnDevice(long destination, long source, long bytes, MemorySegment stream) {
        c.live(DTOD);
        // Safety: both ranges lie inside open allocations of this context that list this stream
        // (checked by the caller's views), so neither is freed before the copy is done.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.COPY_ON_DEVICE, bytes);
        }
        int r = c.api.cuMemcpyDtoDAsync_v2(destination, source, bytes, stream);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        c.check(r, DTOD);
    }

    /**
     * Queues a copy between two devices' memory on {@code stream} (of this context, one of the
     * two); the driver uses the peer link when access is enabled and stages through the host
     * otherwise.
     */
    public void copyPeer(long destination, MemorySegment destinationContext, long source,
            MemorySegment sourceContext, long bytes, MemorySegment stream) {
        c.live(PEER);
        // Safety: both ranges lie inside open allocations of their contexts that list this
        // stream, and each context handle is that device's retained primary context.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.COPY_PEER, bytes);
        }
        int r = c.api.cuMemcpyPeerAsync(destination, destinationContext, source, sourceContext, bytes, stream);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        c.check(r, PEER);
    }

    /** Queues setting {@code bytes} bytes at {@code device} to {@code value} on {@code stream}. */
    public void setBytes(long device, byte value, long bytes, MemorySegment stream) {
        c.live(MEMSET8);
        // Safety: the range lies inside an open allocation of this context that lists this stream.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.MEMSET, bytes);
        }
        int r = c.api.cuMemsetD8Async(device, value, bytes, stream);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        c.check(r, MEMSET8);
    }

    /** Queues setting {@code words} 32-bit words at {@code device} (4-byte aligned) to {@code value} on {@code stream}. */
    public void setWords(long device, int value, long words, MemorySegment stream) {
        c.live(MEMSET32);
        // Safety: the aligned range lies inside an open allocation of this context that lists this stream.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.MEMSET, words * Integer.BYTES);
        }
        int r = c.api.cuMemsetD32Async(device, value, words, stream);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        c.check(r, MEMSET32);
    }

    /** Free and total memory of this context's device. */
    public MemoryInfo info() {
        c.current(INFO);
        MemorySegment out = c.out();
        // Safety: out holds the two size_t values the driver writes; the context is current.
        c.check(c.api.cuMemGetInfo_v2(out, out.asSlice(8)), INFO);
        return new MemoryInfo(out.get(ValueLayout.JAVA_LONG, 0), out.get(ValueLayout.JAVA_LONG, 8));
    }
}
