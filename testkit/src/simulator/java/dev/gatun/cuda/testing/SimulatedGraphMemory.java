package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The simulated driver's graph memory: allocation and free nodes, which {@code cuMemAllocAsync}
 * and {@code cuMemFreeAsync} record on a capturing stream, and the device's graph memory
 * counters and trim. An allocation node gets its address at capture (the allocation exists in
 * {@link SimulatedMemory}'s map from then on, so work captured after it resolves the address)
 * but is backed only between a launch's allocation node and a free (a free node, or
 * {@code cuMemFreeAsync}/{@code cuMemFree} of an allocation a launch left allocated). Work that
 * runs on it while it is not backed, a free of it while it is not allocated, and a launch that
 * would allocate it again without {@code CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH} are
 * violations, and so is a free (a free node, an outside free, or the free a relaunch with
 * {@code AUTO_FREE_ON_LAUNCH} queues first on its stream) that runs while work queued on another
 * stream, not ordered before it, still uses the allocation.
 */
final class SimulatedGraphMemory {

    static final String ALLOC_NODE = "MEM_ALLOC";
    static final String FREE_NODE = "MEM_FREE";

    private final FakeDriverApi gpu;
    private final List<SimulatedMemory.Allocation> allocations = new ArrayList<>();
    private long usedCurrent;
    private long usedHigh;
    private long reservedCurrent;
    private long reservedHigh;

    SimulatedGraphMemory(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    /** cuMemAllocAsync on capturing stream {@code s}: an allocation node at a fresh address, written to {@code out}. */
    int allocationNode(MemorySegment out, long bytes, SimulatedStreams.Stream s) {
        if (bytes <= 0) {
            return INVALID_VALUE;
        }
        SimulatedMemory.Allocation a = gpu.memory.graphAllocation(bytes, s.context, gpu.devices.deviceOf(s.context));
        allocations.add(a);
        StreamOp node = new StreamOp(() -> allocate(a), Set.of(), Set.of());
        node.kind = ALLOC_NODE;
        node.allocation = a;
        gpu.streams.submit(s, node);
        out.set(ValueLayout.JAVA_LONG, 0, a.base);
        return SUCCESS;
    }

    /** cuMemFreeAsync of graph allocation {@code a} on capturing stream {@code s}: a free node. */
    int freeNode(SimulatedMemory.Allocation a, SimulatedStreams.Stream s) {
        for (StreamOp op : s.captured) {
            if (op.allocation == a && FREE_NODE.equals(op.kind)) {
                return INVALID_VALUE; // freed twice in one graph
            }
        }
        StreamOp node = new StreamOp(() -> free(a), Set.of(), Set.of());
        node.kind = FREE_NODE;
        node.allocation = a;
        gpu.streams.submit(s, node);
        return SUCCESS;
    }

    /**
     * cuMemFreeAsync on stream {@code s} (null: cuMemFree) of graph allocation {@code a} outside
     * any capture: legal only while a launch left it allocated.
     */
    int freeOutside(SimulatedMemory.Allocation a, SimulatedStreams.Stream s, String call) {
        if (!a.outstanding) {
            gpu.violations.add(call + " of graph allocation 0x" + Long.toHexString(a.base)
                    + ", which no launch left allocated");
            return INVALID_VALUE;
        }
        a.outstanding = false;
        if (s == null) {
            free(a);
        } else {
            gpu.streams.enqueue(s, () -> free(a), Set.of(), Set.of());
        }
        return SUCCESS;
    }

    /**
     * At a launch of {@code ops} (an executable's nodes): false, with a violation, when an
     * allocation node would allocate what an earlier launch left allocated and the executable
     * does not free it first; else queues those frees on {@code s} when it does.
     */
    boolean beforeLaunch(List<StreamOp> ops, boolean autoFree, SimulatedStreams.Stream s) {
        List<SimulatedMemory.Allocation> again = new ArrayList<>();
        for (StreamOp op : ops) {
            if (ALLOC_NODE.equals(op.kind) && op.allocation.outstanding) {
                again.add(op.allocation);
            }
        }
        if (!again.isEmpty() && !autoFree) {
            gpu.violations.add("cuGraphLaunch of an executable whose allocation 0x" + Long.toHexString(again.get(0).base)
                    + " an earlier launch left allocated (instantiate with AUTO_FREE_ON_LAUNCH, or free it first)");
            return false;
        }
        for (SimulatedMemory.Allocation a : again) {
            a.outstanding = false;
            gpu.streams.enqueue(s, () -> free(a), Set.of(), Set.of());
        }
        return true;
    }

    /** A launch queued {@code node}: the host-side view of what it leaves allocated. */
    void launched(StreamOp node) {
        if (ALLOC_NODE.equals(node.kind)) {
            node.allocation.outstanding = true;
        } else if (FREE_NODE.equals(node.kind)) {
            node.allocation.outstanding = false;
        }
    }

    /** Whether {@code ops} hold memory nodes. */
    static boolean hasMemoryNodes(List<StreamOp> ops) {
        for (StreamOp op : ops) {
            if (op.allocation != null) {
                return true;
            }
        }
        return false;
    }

    private void allocate(SimulatedMemory.Allocation a) {
        if (a.backed) {
            gpu.violations.add("an allocation node ran while 0x" + Long.toHexString(a.base) + " was still allocated");
        }
        a.backed = true;
        usedCurrent += a.size;
        usedHigh = Math.max(usedHigh, usedCurrent);
        if (!a.reserved) {
            a.reserved = true;
            reservedCurrent += a.size;
            reservedHigh = Math.max(reservedHigh, reservedCurrent);
        }
    }

    private void free(SimulatedMemory.Allocation a) {
        gpu.memory.checkUnused(a, "a free of graph allocation");
        if (!a.backed) {
            gpu.violations.add("a free of graph allocation 0x" + Long.toHexString(a.base) + " ran while it was not allocated");
            return;
        }
        a.backed = false;
        usedCurrent -= a.size;
    }

    /** Graph allocations backed now. */
    int backed() {
        return (int) allocations.stream().filter(a -> a.backed).count();
    }

    /** Graph allocations not backed now: addresses only. */
    int unbacked() {
        return allocations.size() - backed();
    }

    public int cuDeviceGraphMemTrim(int device) {
        for (SimulatedMemory.Allocation a : allocations) {
            if (a.reserved && !a.backed && !a.outstanding) {
                a.reserved = false;
                reservedCurrent -= a.size;
            }
        }
        return SUCCESS;
    }

    public int cuDeviceGetGraphMemAttribute(int device, int attribute, MemorySegment value) {
        long v;
        if (attribute == CudaDriver.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT()) {
            v = usedCurrent;
        } else if (attribute == CudaDriver.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH()) {
            v = usedHigh;
        } else if (attribute == CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT()) {
            v = reservedCurrent;
        } else if (attribute == CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH()) {
            v = reservedHigh;
        } else {
            return INVALID_VALUE;
        }
        value.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, v);
        return SUCCESS;
    }

    /** As the driver: only a high-water mark can be set, and only to 0, which resets it to the current value. */
    public int cuDeviceSetGraphMemAttribute(int device, int attribute, MemorySegment value) {
        if (value.reinterpret(8).get(ValueLayout.JAVA_LONG, 0) != 0) {
            return INVALID_VALUE;
        }
        if (attribute == CudaDriver.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH()) {
            usedHigh = usedCurrent;
        } else if (attribute == CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH()) {
            reservedHigh = reservedCurrent;
        } else {
            return INVALID_VALUE;
        }
        return SUCCESS;
    }
}
