package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.MemoryUsage;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, graph memory: the memory the driver keeps per device for the allocations that
 * graphs make (allocation nodes, which a stream-ordered allocation inside a capture becomes).
 * Each call names its operation once, owns its out-parameters and checks its result.
 *
 * <p>The three functions came with CUDA 11.4, older than the oldest driver Gatun runs on, so
 * none needs a version check of its own. They name the device, not a context; the context is
 * made current all the same (cold paths; the safe side), which also fails fast when a sticky
 * error poisoned it.
 */
public final class GraphMemoryCalls {

    /** {@code CUgraphMem_attribute} values. */
    public static final int USED_CURRENT = CudaDriver.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT();
    public static final int USED_HIGH = CudaDriver.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH();
    public static final int RESERVED_CURRENT = CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT();
    public static final int RESERVED_HIGH = CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH();

    private static final String TRIM = "cuDeviceGraphMemTrim";
    private static final String GET_ATTRIBUTE = "cuDeviceGetGraphMemAttribute";
    private static final String SET_ATTRIBUTE = "cuDeviceSetGraphMemAttribute";

    private final Checked c;

    GraphMemoryCalls(Checked c) {
        this.c = c;
    }

    /** Returns the graph memory of this context's device that no graph uses now to the OS. */
    public void trim() {
        c.current(TRIM);
        // Safety: the device ordinal is this context's; memory of a graph that runs or is queued
        // to run, and allocations still outstanding, are never released.
        c.check(c.api.cuDeviceGraphMemTrim(c.device()), TRIM);
    }

    /** One of the {@code *_CURRENT} or {@code *_HIGH} counters of this context's device, in bytes. */
    public long attribute(int attribute) {
        c.current(GET_ATTRIBUTE);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_LONG, 0, 0); // the driver writes a cuuint64_t
        // Safety: out holds the 8 bytes the driver writes; the device ordinal is this context's.
        c.check(c.api.cuDeviceGetGraphMemAttribute(c.device(), attribute, out), GET_ATTRIBUTE);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /** The four counters of this context's device (four driver calls). */
    public MemoryUsage usage() {
        return new MemoryUsage(attribute(USED_CURRENT), attribute(USED_HIGH), attribute(RESERVED_CURRENT),
                attribute(RESERVED_HIGH));
    }

    /** Resets both high-water counters to their current values. */
    public void resetPeaks() {
        resetHighWater(USED_HIGH);
        resetHighWater(RESERVED_HIGH);
    }

    /** Resets a high-water counter ({@link #USED_HIGH} or {@link #RESERVED_HIGH}) to its current value. */
    private void resetHighWater(int attribute) {
        c.current(SET_ATTRIBUTE);
        MemorySegment in = c.out();
        in.set(ValueLayout.JAVA_LONG, 0, 0); // the only value the driver takes for a high-water mark
        // Safety: in holds the cuuint64_t the driver reads; the device ordinal is this context's.
        c.check(c.api.cuDeviceSetGraphMemAttribute(c.device(), attribute, in), SET_ATTRIBUTE);
    }
}
