package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The simulated driver keeps the current context per carrier thread and refuses a call that acts
 * on the current context when its carrier has none, or another than the one its handle belongs
 * to ({@link SimulatedCurrentContexts}).
 */
class SimulatedCurrentContextsTest {

    private static final int INVALID_CONTEXT = CudaDriver.CUDA_ERROR_INVALID_CONTEXT();

    private final FakeDriverApi gpu = new FakeDriverApi();
    private final DriverApi api = gpu.api();
    private final MemorySegment primary = gpu.primaryContext(0);
    private final MemorySegment other = gpu.foreignContext(0);
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment out = arena.allocate(8);
    private final TwoCarriers carriers = new TwoCarriers();

    @AfterEach
    void close() throws InterruptedException {
        carriers.close();
        arena.close();
    }

    private long created(int result) {
        assertEquals(FakeDriverApi.SUCCESS, result);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    @Test
    void aCallThatActsOnTheCurrentContextIsRefusedOnAThreadWithNone() {
        assertEquals(INVALID_CONTEXT, api.cuMemAlloc_v2(out, 64));
        assertEquals(INVALID_CONTEXT, api.cuStreamCreateWithPriority(out, 1, 0));
        assertEquals(INVALID_CONTEXT, api.cuCtxSynchronize());
        String thread = Thread.currentThread().getName();
        assertEquals(List.of("cuMemAlloc_v2: no context is current on thread '" + thread + "'",
                "cuStreamCreateWithPriority: no context is current on thread '" + thread + "'",
                "cuCtxSynchronize: no context is current on thread '" + thread + "'"), gpu.contextRefusals());
        // A call that names its stream acts in the stream's context whatever is current.
        MemorySegment stream = gpu.foreignStream(primary);
        assertEquals(FakeDriverApi.SUCCESS, api.cuMemsetD8Async(gpu.foreignDeviceMemory(primary, 16), (byte) 1, 16, stream));
        assertEquals(FakeDriverApi.SUCCESS, api.cuStreamQuery(stream));
        assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(primary));
        created(api.cuMemAlloc_v2(out, 64));
        assertEquals(3, gpu.contextRefusals().size(), "none since");
    }

    @Test
    void aFreeOrDestroyUnderAnotherContextThanItsHandlesIsRefusedAndSucceedsUnderItsOwn() {
        assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(primary));
        long memory = created(api.cuMemAlloc_v2(out, 64));
        MemorySegment event = MemorySegment.ofAddress(created(api.cuEventCreate(out, 0)));
        MemorySegment stream = MemorySegment.ofAddress(created(api.cuStreamCreateWithPriority(out, 1, 0)));
        assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(other));
        assertEquals(INVALID_CONTEXT, api.cuMemFree_v2(memory));
        assertEquals(INVALID_CONTEXT, api.cuEventDestroy_v2(event));
        assertEquals(INVALID_CONTEXT, api.cuStreamBeginCapture_v2(stream, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        assertEquals(INVALID_CONTEXT, api.cuStreamDestroy_v2(stream));
        assertEquals(4, gpu.contextRefusals().size());
        assertEquals("cuMemFree_v2: it names a device allocation of context 0x" + Long.toHexString(primary.address())
                + ", but context 0x" + Long.toHexString(other.address()) + " is current on thread '"
                + Thread.currentThread().getName() + "'", gpu.contextRefusals().getFirst());
        assertEquals(1, gpu.liveDeviceAllocations(), "refused: nothing freed");
        assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(primary));
        assertEquals(FakeDriverApi.SUCCESS, api.cuMemFree_v2(memory));
        assertEquals(FakeDriverApi.SUCCESS, api.cuEventDestroy_v2(event));
        assertEquals(FakeDriverApi.SUCCESS, api.cuStreamDestroy_v2(stream));
        assertEquals(0, gpu.liveDeviceAllocations());
        assertEquals(4, gpu.contextRefusals().size(), "none under the right context");
    }

    @Test
    void aVirtualThreadSeesTheCurrentContextOfTheCarrierItRunsOnNotItsOwn() throws Exception {
        assertTrue(Carriers.visible(), "runtime-core's tests open java.lang to see a virtual thread's carrier");
        Thread b = carriers.runOnB(() -> assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(other)));
        long[] seen = new long[2];
        Background<Void> v = Background.run(carriers.virtualThreads(), "V", () -> {
            try (Arena local = Arena.ofConfined()) {
                MemorySegment current = local.allocate(8);
                assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(primary)); // on carrier A
                assertEquals(FakeDriverApi.SUCCESS, api.cuCtxGetCurrent(current));
                seen[0] = current.get(ValueLayout.JAVA_LONG, 0);
                carriers.mountOnB();
                Thread.yield(); // a park: V resumes on carrier B
                assertEquals(FakeDriverApi.SUCCESS, api.cuCtxGetCurrent(current));
                seen[1] = current.get(ValueLayout.JAVA_LONG, 0);
            }
        });
        v.join();
        assertEquals(List.of("carrier-A", "carrier-B"), carriers.mounts(), "V ran on A, then on B");
        assertEquals(primary.address(), seen[0]);
        assertEquals(other.address(), seen[1], "on B, V sees B's current context, not the one it set on A");
        Thread a = carriers.runOnA(() -> { });
        assertEquals(primary, gpu.currentContextOn(a), "V's cuCtxSetCurrent went to carrier A");
        assertEquals(other, gpu.currentContextOn(b));
        assertEquals(MemorySegment.NULL, gpu.currentContextOn(Thread.currentThread()));
    }

    @Test
    void aThreadLocalCaptureEndsOnlyOnTheCarrierThatBeganItAndARelaxedOneOnAny() throws Exception {
        MemorySegment stream = gpu.foreignStream(primary);
        int[] ends = new int[3];
        Background<Void> v = Background.run(carriers.virtualThreads(), "V", () -> {
            try (Arena local = Arena.ofConfined()) {
                MemorySegment graph = local.allocate(8);
                assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(primary));
                assertEquals(FakeDriverApi.SUCCESS, api.cuStreamBeginCapture_v2(stream,
                        CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL())); // on carrier A
                carriers.mountOnB();
                Thread.yield();
                assertEquals(FakeDriverApi.SUCCESS, api.cuCtxSetCurrent(primary));
                ends[0] = api.cuStreamEndCapture(stream, graph); // on carrier B: refused, the capture goes on
                carriers.mountOnA();
                Thread.yield();
                ends[1] = api.cuStreamEndCapture(stream, graph); // back on A
                assertEquals(FakeDriverApi.SUCCESS, api.cuStreamBeginCapture_v2(stream,
                        CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
                carriers.mountOnB();
                Thread.yield();
                ends[2] = api.cuStreamEndCapture(stream, graph); // a relaxed one, on B
            }
        });
        v.join();
        assertEquals(List.of("carrier-A", "carrier-B", "carrier-A", "carrier-B"), carriers.mounts());
        assertEquals(CudaDriver.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD(), ends[0]);
        assertEquals(FakeDriverApi.SUCCESS, ends[1]);
        assertEquals(FakeDriverApi.SUCCESS, ends[2]);
    }
}
