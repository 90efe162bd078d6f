package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, stream memory operations: writing a 32/64-bit word and waiting on one in stream
 * order ({@code cuStreamWriteValue*}, {@code cuStreamWaitValue*}), a batch of them
 * ({@code cuStreamBatchMemOp}) on a stream or as a graph node, and the mapped host word they
 * signal through ({@code cuMemHostAlloc} with {@code DEVICEMAP}, {@code cuMemHostGetDevicePointer}).
 * Each call names its operation once, owns its out-parameters and checks its result.
 *
 * <p>The stream calls name their stream and only check for poison (as every call that names a
 * stream, see {@link DriverCalls}); the allocation, the device pointer and the graph node make
 * the context current. Every function here is older than Gatun's minimum driver (12.0).
 */
public final class MemOpCalls {

    private static final String WRITE32 = "cuStreamWriteValue32";
    private static final String WRITE64 = "cuStreamWriteValue64";
    private static final String WAIT32 = "cuStreamWaitValue32";
    private static final String WAIT64 = "cuStreamWaitValue64";
    private static final String BATCH = "cuStreamBatchMemOp";
    private static final String ADD_BATCH_NODE = "cuGraphAddBatchMemOpNode";
    private static final String HOST_ALLOC = "cuMemHostAlloc";
    private static final String DEVICE_POINTER = "cuMemHostGetDevicePointer";
    /** Mapped into every context's address space, and usable by every context (portable). */
    private static final int MAPPED = CudaDriver.CU_MEMHOSTALLOC_DEVICEMAP() | CudaDriver.CU_MEMHOSTALLOC_PORTABLE();

    private final Checked c;

    MemOpCalls(Checked c) {
        this.c = c;
    }

    /** Queues a write of {@code value} to the aligned 4-byte word at {@code address} on {@code stream}. */
    public void write32(MemorySegment stream, long address, int value, int flags) {
        c.live(WRITE32);
        // Safety: the caller's contract: the word is 4-byte aligned, inside an open allocation
        // (device memory, or mapped host memory) that lists this open stream, and flags are valid.
        c.check(c.api.cuStreamWriteValue32_v2(stream, address, value, flags), WRITE32);
    }

    /** Queues a write of {@code value} to the aligned 8-byte word at {@code address} on {@code stream}. */
    public void write64(MemorySegment stream, long address, long value, int flags) {
        c.live(WRITE64);
        // Safety: as write32, for an 8-byte aligned word on a device that supports 64-bit operations.
        c.check(c.api.cuStreamWriteValue64_v2(stream, address, value, flags), WRITE64);
    }

    /** Makes later work on {@code stream} wait until the 4-byte word at {@code address} meets {@code flags}' condition. */
    public void wait32(MemorySegment stream, long address, int value, int flags) {
        c.live(WAIT32);
        // Safety: as write32; a wait reads the word, and the memory outlives the wait (it lists the stream).
        c.check(c.api.cuStreamWaitValue32_v2(stream, address, value, flags), WAIT32);
    }

    /** Makes later work on {@code stream} wait until the 8-byte word at {@code address} meets {@code flags}' condition. */
    public void wait64(MemorySegment stream, long address, long value, int flags) {
        c.live(WAIT64);
        // Safety: as wait32, for an 8-byte aligned word on a device that supports 64-bit operations.
        c.check(c.api.cuStreamWaitValue64_v2(stream, address, value, flags), WAIT64);
    }

    /**
     * Queues {@code count} operations of {@code params} (an array of {@code CUstreamBatchMemOpParams})
     * on {@code stream}, in order.
     */
    public void batch(MemorySegment stream, int count, MemorySegment params) {
        c.live(BATCH);
        // Safety: params holds count filled-in entries, each naming an aligned word inside an open
        // allocation that lists this open stream; the driver reads them during the call; flags must be 0.
        c.check(c.api.cuStreamBatchMemOp_v2(stream, count, params, 0), BATCH);
    }

    /**
     * Adds a node running the {@code count} operations of {@code params} to {@code graph}, after
     * {@code dependencies} (node handles of that graph, maybe empty).
     */
    public MemorySegment addBatchNode(MemorySegment graph, MemorySegment dependencies, int count, MemorySegment params,
            Arena arena) {
        c.current(ADD_BATCH_NODE);
        MemorySegment node = CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st.allocate(arena);
        CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st.ctx(node, c.context());
        CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st.count(node, count);
        CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st.paramArray(node, params);
        CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st.flags(node, 0);
        MemorySegment out = c.out();
        long n = dependencies.byteSize() / ValueLayout.ADDRESS.byteSize();
        // Safety: graph is live; dependencies holds n live nodes of it; params as in batch, naming
        // memory the graph holds; the driver copies node and params during the call.
        c.check(c.api.cuGraphAddBatchMemOpNode(out, graph, dependencies, n, node), ADD_BATCH_NODE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * {@code bytes} of page-locked host memory mapped into the device's address space; may
     * synchronize: call it inside the gate. Free it with {@link MemoryCalls#freeHost}.
     */
    public long allocateMapped(long bytes) {
        c.current(HOST_ALLOC);
        MemorySegment out = c.out();
        // Safety: out holds the host pointer the driver writes; the context is current.
        c.check(c.api.cuMemHostAlloc(out, bytes, MAPPED), HOST_ALLOC);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /** The device address of mapped host memory at {@code host} (from {@link #allocateMapped}). */
    public long devicePointer(long host) {
        c.current(DEVICE_POINTER);
        MemorySegment out = c.out();
        // Safety: host is the start of a live mapped allocation; out holds the CUdeviceptr; flags must be 0.
        c.check(c.api.cuMemHostGetDevicePointer_v2(out, MemorySegment.ofAddress(host), 0), DEVICE_POINTER);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }
}
