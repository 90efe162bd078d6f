package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CUDA_CONDITIONAL_NODE_PARAMS;
import dev.gatun.cuda.bindings.driver.CUgraphNodeParams_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The simulated driver's graph of a capture in progress on its own, through raw driver calls:
 * what {@code cuStreamGetCaptureInfo_v3} reports, and the misuse it flags that the real driver
 * takes silently (a conditional node after stale dependencies, work captured before the node
 * became the capture's dependency, a capture into a graph that is not a body, instantiating a
 * graph still captured into), so that Gatun's tests on it can fail.
 */
class SimulatedCaptureGraphsTest {

    private static final int SUCCESS = 0;

    private final Simulated sim = new Simulated();
    private final DriverApi api = sim.gpu.api();

    private static void check(int result) {
        assertEquals(SUCCESS, result);
    }

    @Test
    void aCaptureRecordsIntoAGraphAndMisuseOfItsDependenciesIsFlagged() {
        CudaContext ctx = sim.context();
        Stream s = ctx.createStream();
        Stream other = ctx.createStream();
        DeviceBuffer b = ctx.allocate(64);
        MemorySegment stream = s.handle();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(8);
            MemorySegment graph = arena.allocate(8);
            MemorySegment deps = arena.allocate(8);
            MemorySegment edges = arena.allocate(8);
            MemorySegment count = arena.allocate(8);
            check(api.cuStreamGetCaptureInfo_v3(stream, status, MemorySegment.NULL, graph, deps, edges, count));
            assertEquals(CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE(), status.get(ValueLayout.JAVA_INT, 0));

            check(api.cuStreamBeginCapture_v2(stream, CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL()));
            check(api.cuMemsetD8Async(b.address(), (byte) 1, 64, stream));
            check(api.cuStreamGetCaptureInfo_v3(stream, status, MemorySegment.NULL, graph, deps, edges, count));
            assertEquals(CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE(), status.get(ValueLayout.JAVA_INT, 0));
            assertEquals(1, count.get(ValueLayout.JAVA_LONG, 0), "the memset is the dependency");
            MemorySegment g = MemorySegment.ofAddress(graph.get(ValueLayout.JAVA_LONG, 0));
            MemorySegment staleDeps = MemorySegment.ofAddress(deps.get(ValueLayout.JAVA_LONG, 0));
            MemorySegment staleEdges = MemorySegment.ofAddress(edges.get(ValueLayout.JAVA_LONG, 0));
            MemorySegment handle = arena.allocate(8);
            check(api.cuGraphConditionalHandleCreate(handle, g, MemorySegment.ofAddress(1), 1,
                    CudaDriver.CU_GRAPH_COND_ASSIGN_DEFAULT()));

            check(api.cuMemsetD8Async(b.address(), (byte) 2, 64, stream)); // the dependencies read are stale now
            MemorySegment params = CUgraphNodeParams_st.allocate(arena);
            CUgraphNodeParams_st.type(params, CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL());
            MemorySegment c = CUgraphNodeParams_st.conditional(params);
            CUDA_CONDITIONAL_NODE_PARAMS.handle(c, handle.get(ValueLayout.JAVA_LONG, 0));
            CUDA_CONDITIONAL_NODE_PARAMS.type(c, CudaDriver.CU_GRAPH_COND_TYPE_WHILE());
            CUDA_CONDITIONAL_NODE_PARAMS.size(c, 1);
            CUDA_CONDITIONAL_NODE_PARAMS.ctx(c, MemorySegment.ofAddress(1));
            MemorySegment node = arena.allocate(8);
            check(api.cuGraphAddNode_v2(node, g, staleDeps, staleEdges, 1, params));
            check(api.cuMemsetD8Async(b.address(), (byte) 3, 64, stream)); // before the node became the dependency
            MemorySegment body = CUDA_CONDITIONAL_NODE_PARAMS.phGraph_out(c).reinterpret(8)
                    .getAtIndex(ValueLayout.ADDRESS, 0);

            check(api.cuStreamBeginCaptureToGraph(other.handle(), g, MemorySegment.NULL, MemorySegment.NULL, 0,
                    CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL())); // not a body
            assertEquals(CudaDriver.CUDA_ERROR_ILLEGAL_STATE(), api.cuStreamBeginCaptureToGraph(other.handle(), body,
                    MemorySegment.NULL, MemorySegment.NULL, 0, CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL()),
                    "it captures already");
            check(api.cuStreamEndCapture(other.handle(), graph));
            assertEquals(g.address(), graph.get(ValueLayout.JAVA_LONG, 0), "the end returns the graph captured into");

            MemorySegment exec = arena.allocate(8);
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), api.cuGraphInstantiateWithFlags(exec, g, 0),
                    "not instantiable until the capture ends");
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), api.cuStreamUpdateCaptureDependencies_v2(stream, node,
                    MemorySegment.NULL, 1, 7), "an unknown flag");
            check(api.cuStreamUpdateCaptureDependencies_v2(stream, node, MemorySegment.NULL, 1,
                    CudaDriver.CU_STREAM_SET_CAPTURE_DEPENDENCIES()));
            check(api.cuStreamEndCapture(stream, graph));
            assertEquals(g.address(), graph.get(ValueLayout.JAVA_LONG, 0));
            assertNotEquals(0, node.get(ValueLayout.JAVA_LONG, 0));
            check(api.cuGraphDestroy(g));
        }
        b.close();
        s.close();
        other.close();
        ctx.close();
        assertEquals(List.of(
                "a conditional node was added to a capture's graph after stale dependencies [0], not the capture's current [1]",
                "work was captured after a conditional node was added to the capture's graph and before that node "
                        + "became the capture's dependency: it does not wait for the node",
                "cuStreamBeginCaptureToGraph into a graph that is not a conditional node's body",
                "cuStreamBeginCaptureToGraph into a graph another capture records into",
                "cuGraphInstantiateWithFlags of a graph a stream capture still records into"),
                sim.gpu.violations());
    }
}
