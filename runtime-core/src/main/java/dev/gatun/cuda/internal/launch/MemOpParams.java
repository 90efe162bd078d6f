package dev.gatun.cuda.internal.launch;

import dev.gatun.cuda.bindings.driver.CUstreamBatchMemOpParams_union;
import dev.gatun.cuda.bindings.driver.CUstreamBatchMemOpParams_union.CUstreamMemOpWaitValueParams_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Describes stream memory operations to the driver: the {@code CUstreamBatchMemOpParams} array
 * a batch ({@code cuStreamBatchMemOp}) or a batch memory-operation node
 * ({@code cuGraphAddBatchMemOpNode}) takes, from operations whose targets were checked.
 */
public final class MemOpParams {

    public static final int WRITE32 = CudaDriver.CU_STREAM_MEM_OP_WRITE_VALUE_32();
    public static final int WRITE64 = CudaDriver.CU_STREAM_MEM_OP_WRITE_VALUE_64();
    public static final int WAIT32 = CudaDriver.CU_STREAM_MEM_OP_WAIT_VALUE_32();
    public static final int WAIT64 = CudaDriver.CU_STREAM_MEM_OP_WAIT_VALUE_64();
    private static final long ENTRY = CUstreamBatchMemOpParams_union.layout().byteSize();

    private MemOpParams() {
    }

    /**
     * One operation: {@code operation} ({@link #WRITE32} and the others) on the word at
     * {@code address}, with {@code value} (its low 32 bits for a 32-bit one) and the driver's flags.
     */
    public record Op(int operation, long address, long value, int flags) {
    }

    /** {@return whether {@code operation} writes or waits on a 64-bit word} */
    public static boolean is64(int operation) {
        return operation == WRITE64 || operation == WAIT64;
    }

    /** The driver's parameter array for {@code ops}, in {@code arena}. */
    public static MemorySegment encode(List<Op> ops, Arena arena) {
        MemorySegment all = arena.allocate(ENTRY * ops.size(), 8); // zeroed: the alias fields stay 0
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            MemorySegment e = all.asSlice(i * ENTRY, ENTRY);
            // The write and wait structs share one layout (operation, address, value, flags, alias).
            CUstreamMemOpWaitValueParams_st.operation(e, op.operation());
            CUstreamMemOpWaitValueParams_st.address(e, op.address());
            if (is64(op.operation())) {
                CUstreamMemOpWaitValueParams_st.value64(e, op.value());
            } else {
                CUstreamMemOpWaitValueParams_st.value(e, (int) op.value());
            }
            CUstreamMemOpWaitValueParams_st.flags(e, op.flags());
        }
        return all;
    }
}
