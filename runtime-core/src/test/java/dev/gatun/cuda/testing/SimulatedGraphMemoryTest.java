package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The simulated driver's graph memory on its own, through raw driver calls: it flags what the
 * real driver refuses or leaves undefined, so that Gatun's tests on it can fail.
 */
class SimulatedGraphMemoryTest {

    private static final int SUCCESS = 0;
    private static final long BYTES = 64;

    private final Simulated sim = new Simulated();
    private final DriverApi api = sim.gpu.api();

    private static void check(int result) {
        assertEquals(SUCCESS, result);
    }

    @Test
    void misuseOfGraphMemoryIsRefusedAndFlagged() {
        CudaContext ctx = sim.context();
        Stream s = ctx.createStream();
        MemorySegment stream = s.handle();
        long address;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(8);
            check(api.cuStreamBeginCapture_v2(stream, CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL()));
            check(api.cuMemAllocAsync(out, BYTES, stream));
            address = out.get(ValueLayout.JAVA_LONG, 0);
            check(api.cuStreamEndCapture(stream, out));
            MemorySegment graph = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));

            check(api.cuMemsetD8Async(address, (byte) 1, BYTES, stream)); // no launch allocated it yet
            check(api.cuGraphInstantiateWithFlags(out, graph, 0)); // without AUTO_FREE_ON_LAUNCH
            MemorySegment exec = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(CudaDriver.CUDA_ERROR_NOT_SUPPORTED(), api.cuGraphInstantiateWithFlags(out, graph, 0));
            assertEquals(CudaDriver.CUDA_ERROR_NOT_SUPPORTED(), api.cuGraphClone(out, graph));
            check(api.cuGraphLaunch(exec, stream));
            assertEquals(1, sim.gpu.backedGraphAllocations());
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), api.cuGraphLaunch(exec, stream), "it would allocate twice");

            check(api.cuDeviceGetGraphMemAttribute(0, CudaDriver.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT(), out));
            assertEquals(BYTES, out.get(ValueLayout.JAVA_LONG, 0));
            check(api.cuMemFreeAsync(address, stream)); // the launch left it allocated: a legal free
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), api.cuMemFreeAsync(address, stream), "freed twice");
            check(api.cuDeviceGraphMemTrim(0));
            check(api.cuDeviceGetGraphMemAttribute(0, CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT(), out));
            assertEquals(0, out.get(ValueLayout.JAVA_LONG, 0), "trimmed");
            check(api.cuDeviceGetGraphMemAttribute(0, CudaDriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH(), out));
            assertEquals(BYTES, out.get(ValueLayout.JAVA_LONG, 0), "the high-water mark stays until reset");

            check(api.cuGraphExecDestroy(exec));
            check(api.cuGraphDestroy(graph));
        }
        s.close();
        ctx.close();
        assertEquals(List.of(
                "work used graph allocation 0x" + Long.toHexString(address) + " while it was not allocated",
                "cuGraphInstantiateWithFlags of a graph with memory nodes that has an executable already",
                "cuGraphClone of a graph with memory nodes",
                "cuGraphLaunch of an executable whose allocation 0x" + Long.toHexString(address)
                        + " an earlier launch left allocated (instantiate with AUTO_FREE_ON_LAUNCH, or free it first)",
                "cuMemFreeAsync of graph allocation 0x" + Long.toHexString(address)
                        + ", which no launch left allocated"),
                sim.gpu.violations());
    }
}
