package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUstreamBatchMemOpParams_union;
import dev.gatun.cuda.bindings.driver.CUstreamBatchMemOpParams_union.CUstreamMemOpWaitValueParams_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * The simulated driver's stream memory operations and mapped host memory, as strict as the
 * driver: a word must be aligned to its size and lie in device memory or in pinned memory
 * allocated with {@code DEVICEMAP}; flags outside the documented ones are refused; 64-bit
 * operations, NOR waits and flushing waits need their device attribute
 * ({@code CUDA_ERROR_NOT_SUPPORTED} otherwise). A write is an operation of its stream; a wait
 * holds its stream's queue until the word meets its condition, so later work waits for another
 * stream, a kernel or the host to write the value. A host wait that needs a value nothing
 * queued will ever write is a {@linkplain FakeDriverApi#violations() violation} (the real
 * driver would never return), not a hang.
 */
final class SimulatedMemOps {

    private static final int WRITE32 = CudaDriver.CU_STREAM_MEM_OP_WRITE_VALUE_32();
    private static final int WRITE64 = CudaDriver.CU_STREAM_MEM_OP_WRITE_VALUE_64();
    private static final int WAIT32 = CudaDriver.CU_STREAM_MEM_OP_WAIT_VALUE_32();
    private static final int WAIT64 = CudaDriver.CU_STREAM_MEM_OP_WAIT_VALUE_64();
    private static final int FLUSH = CudaDriver.CU_STREAM_WAIT_VALUE_FLUSH();
    private static final long ENTRY = CUstreamBatchMemOpParams_union.layout().byteSize();

    private final FakeDriverApi gpu;

    SimulatedMemOps(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuMemHostGetDevicePointer_v2(MemorySegment out, MemorySegment p, int flags) {
        Integer allocFlags = gpu.memory.hostFlags.get(p.address());
        if (flags != 0 || allocFlags == null || (allocFlags & CudaDriver.CU_MEMHOSTALLOC_DEVICEMAP()) == 0) {
            return INVALID_VALUE; // not the start of a mapped allocation
        }
        out.set(ValueLayout.JAVA_LONG, 0, p.address()); // unified addressing: the device sees it at the host address
        return SUCCESS;
    }

    public int cuStreamWriteValue32_v2(MemorySegment stream, long address, int value, int flags) {
        return submit(stream, List.of(op(WRITE32, address, value & 0xFFFF_FFFFL, flags)));
    }

    public int cuStreamWriteValue64_v2(MemorySegment stream, long address, long value, int flags) {
        return submit(stream, List.of(op(WRITE64, address, value, flags)));
    }

    public int cuStreamWaitValue32_v2(MemorySegment stream, long address, int value, int flags) {
        return submit(stream, List.of(op(WAIT32, address, value & 0xFFFF_FFFFL, flags)));
    }

    public int cuStreamWaitValue64_v2(MemorySegment stream, long address, long value, int flags) {
        return submit(stream, List.of(op(WAIT64, address, value, flags)));
    }

    public int cuStreamBatchMemOp_v2(MemorySegment stream, int count, MemorySegment params, int flags) {
        List<Result> ops = flags != 0 || count <= 0 || count >= 256 ? null : decode(params, count);
        return ops == null ? INVALID_VALUE : submit(stream, ops);
    }

    /** The operation of a batch node: each launch queues its operations; null when the driver refuses the parameters. */
    StreamOp batchNode(MemorySegment nodeParams) {
        MemorySegment p = nodeParams.reinterpret(32); // CUDA_BATCH_MEM_OP_NODE_PARAMS: ctx, count, paramArray, flags
        int count = p.get(ValueLayout.JAVA_INT, 8);
        MemorySegment array = p.get(ValueLayout.ADDRESS, 16);
        if (p.get(ValueLayout.JAVA_INT, 24) != 0 || count <= 0 || count >= 256) {
            return null;
        }
        List<Result> decoded = decode(array, count);
        if (decoded == null || decoded.stream().anyMatch(r -> r.error != SUCCESS)) {
            return null;
        }
        List<StreamOp> ops = decoded.stream().map(r -> r.op).toList();
        Set<Long> uses = new HashSet<>();
        ops.forEach(o -> uses.addAll(o.deviceUses));
        StreamOp node = new StreamOp(() -> { }, uses, Set.of());
        node.batch = ops;
        return node;
    }

    private List<Result> decode(MemorySegment params, int count) {
        MemorySegment all = params.reinterpret(ENTRY * count);
        List<Result> ops = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            MemorySegment e = all.asSlice(i * ENTRY, ENTRY);
            int operation = CUstreamMemOpWaitValueParams_st.operation(e);
            boolean wide = operation == WRITE64 || operation == WAIT64;
            long value = wide ? CUstreamMemOpWaitValueParams_st.value64(e)
                    : CUstreamMemOpWaitValueParams_st.value(e) & 0xFFFF_FFFFL;
            ops.add(op(operation, CUstreamMemOpWaitValueParams_st.address(e), value,
                    CUstreamMemOpWaitValueParams_st.flags(e)));
        }
        return ops;
    }

    /** An operation, or why the driver refuses it. */
    private record Result(StreamOp op, int error) {
    }

    /** Queues every operation on {@code stream} in order, or none when one is refused. */
    private int submit(MemorySegment stream, List<Result> ops) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        for (Result r : ops) {
            if (r.error != SUCCESS) {
                return r.error;
            }
        }
        ops.forEach(r -> gpu.streams.submit(s, r.op));
        return SUCCESS;
    }

    private Result op(int operation, long address, long value, int flags) {
        boolean wide = operation == WRITE64 || operation == WAIT64;
        boolean write = operation == WRITE32 || operation == WRITE64;
        if (!write && operation != WAIT32 && operation != WAIT64) {
            return new Result(null, INVALID_VALUE);
        }
        int bytes = wide ? 8 : 4;
        if (wide && !supports(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS())) {
            return new Result(null, CudaDriver.CUDA_ERROR_NOT_SUPPORTED());
        }
        if ((address & (bytes - 1)) != 0) {
            return new Result(null, INVALID_VALUE);
        }
        int condition = flags & ~FLUSH;
        // The v2 entry points refuse NO_MEMORY_BARRIER, as the H200's driver does ("Invalid flags 0x1").
        if (write ? flags != CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT()
                : condition > CudaDriver.CU_STREAM_WAIT_VALUE_NOR()) {
            return new Result(null, INVALID_VALUE);
        }
        if (!write && condition == CudaDriver.CU_STREAM_WAIT_VALUE_NOR()
                && !supports(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR())
                || !write && (flags & FLUSH) != 0 && !supports(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES())) {
            return new Result(null, CudaDriver.CUDA_ERROR_NOT_SUPPORTED());
        }
        MemorySegment word = gpu.memory.resolve(address, bytes);
        Set<Long> deviceUses;
        Set<Long> hostUses;
        if (word != null) {
            deviceUses = gpu.memory.uses(address, bytes);
            hostUses = Set.of();
        } else {
            word = gpu.memory.resolveMapped(address, bytes);
            if (word == null) {
                return new Result(null, INVALID_VALUE); // neither device memory nor mapped host memory
            }
            deviceUses = Set.of();
            hostUses = gpu.memory.hostUse(address);
        }
        MemorySegment w = word;
        if (write) {
            return new Result(new StreamOp(() -> store(w, wide, value), deviceUses, hostUses), SUCCESS);
        }
        StreamOp wait = new StreamOp(() -> { }, deviceUses, hostUses);
        wait.until = met(w, wide, value, condition);
        return new Result(wait, SUCCESS);
    }

    private boolean supports(int attribute) {
        return gpu.devices.attributes.getOrDefault(attribute, SimulatedDevices.defaultAttribute(attribute)) != 0;
    }

    private static void store(MemorySegment word, boolean wide, long value) {
        if (wide) {
            word.set(ValueLayout.JAVA_LONG, 0, value);
        } else {
            word.set(ValueLayout.JAVA_INT, 0, (int) value);
        }
    }

    /** The driver's conditions: GEQ cyclic ({@code (int) (word - value) >= 0}), EQ, AND ({@code != 0}), NOR. */
    private static BooleanSupplier met(MemorySegment word, boolean wide, long value, int condition) {
        return () -> {
            long current = wide ? word.get(ValueLayout.JAVA_LONG, 0) : word.get(ValueLayout.JAVA_INT, 0) & 0xFFFF_FFFFL;
            if (condition == CudaDriver.CU_STREAM_WAIT_VALUE_GEQ()) {
                return wide ? current - value >= 0 : (int) (current - value) >= 0;
            } else if (condition == CudaDriver.CU_STREAM_WAIT_VALUE_EQ()) {
                return current == value;
            } else if (condition == CudaDriver.CU_STREAM_WAIT_VALUE_AND()) {
                return (current & value) != 0;
            }
            long nor = ~(current | value);
            return wide ? nor != 0 : (nor & 0xFFFF_FFFFL) != 0;
        };
    }
}
