package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.bindings.driver.CUmemLocation;
import dev.gatun.cuda.bindings.driver.CUmemcpyAttributes;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The simulated batch copy is as strict as the driver, or stricter: a batch with a bad count,
 * attribute or range is refused whole and queues nothing; a capturing stream refuses it; a driver
 * without the entry point cannot be called through it.
 */
class SimulatedBatchCopiesTest {

    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();
    private static final int N = 64;

    private final FakeDriverApi gpu = new FakeDriverApi();
    private final DriverApi api = gpu.api();
    private final MemorySegment context = gpu.primaryContext(0);
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment stream = gpu.foreignStream(context);
    private final long device = gpu.foreignDeviceMemory(context, 2 * N);
    private final long pinned = pinned(2 * N);
    private final MemorySegment dsts = arena.allocate(ValueLayout.JAVA_LONG, 2);
    private final MemorySegment srcs = arena.allocate(ValueLayout.JAVA_LONG, 2);
    private final MemorySegment sizes = arena.allocate(ValueLayout.JAVA_LONG, 2);
    private final MemorySegment attrs = CUmemcpyAttributes.allocateArray(2, arena);
    private final MemorySegment starts = arena.allocate(ValueLayout.JAVA_LONG, 2);

    private long pinned(long bytes) {
        MemorySegment out = arena.allocate(8);
        assertEquals(0, api.cuCtxSetCurrent(context)); // cuMemHostAlloc acts on the current context
        assertEquals(0, api.cuMemHostAlloc(out, bytes, 0));
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /** Two uploads of N bytes, pinned[0..N) and pinned[N..2N) to the device, with valid attributes. */
    private void twoUploads() {
        MemorySegment host = MemorySegment.ofAddress(pinned).reinterpret(2 * N);
        for (int i = 0; i < 2 * N; i++) {
            host.set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
        }
        for (int i = 0; i < 2; i++) {
            dsts.setAtIndex(ValueLayout.JAVA_LONG, i, device + (long) i * N);
            srcs.setAtIndex(ValueLayout.JAVA_LONG, i, pinned + (long) i * N);
            sizes.setAtIndex(ValueLayout.JAVA_LONG, i, N);
        }
        attrs.fill((byte) 0);
        CUmemcpyAttributes.srcAccessOrder(attrs, CudaDriver.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM());
        starts.setAtIndex(ValueLayout.JAVA_LONG, 0, 0);
    }

    private int batch(long count, long numAttrs) {
        return api.cuMemcpyBatchAsync_v2(dsts, srcs, sizes, count, attrs, starts, numAttrs, stream);
    }

    private byte[] deviceBytes() {
        return gpu.deviceBytes(device, 2 * N);
    }

    @Test
    void aValidBatchCopiesEveryRange() {
        twoUploads();
        assertEquals(0, batch(2, 1));
        assertEquals(0, api.cuStreamSynchronize(stream));
        assertArrayEquals(MemorySegment.ofAddress(pinned).reinterpret(2 * N).toArray(ValueLayout.JAVA_BYTE), deviceBytes());
    }

    @Test
    void aBadCountOrAttributeIsRefusedAndNothingIsQueued() {
        twoUploads();
        byte[] before = deviceBytes();
        assertEquals(INVALID_VALUE, batch(0, 1), "no copies");
        assertEquals(INVALID_VALUE, batch(2, 0), "no attributes");
        assertEquals(INVALID_VALUE, batch(1, 2), "more attributes than copies");
        starts.setAtIndex(ValueLayout.JAVA_LONG, 0, 1);
        assertEquals(INVALID_VALUE, batch(2, 1), "the first attribute must start at copy 0");
        twoUploads();
        starts.setAtIndex(ValueLayout.JAVA_LONG, 1, 0);
        MemorySegment.copy(attrs, 0, attrs, CUmemcpyAttributes.sizeof(), CUmemcpyAttributes.sizeof());
        assertEquals(INVALID_VALUE, batch(2, 2), "attribute starts must increase");
        twoUploads();
        CUmemcpyAttributes.srcAccessOrder(attrs, CudaDriver.CU_MEMCPY_SRC_ACCESS_ORDER_INVALID());
        assertEquals(INVALID_VALUE, batch(2, 1), "an invalid source order");
        twoUploads();
        CUmemcpyAttributes.flags(attrs, 0x80);
        assertEquals(INVALID_VALUE, batch(2, 1), "an unknown flag");
        twoUploads();
        CUmemLocation.type(CUmemcpyAttributes.dstLocHint(attrs), CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE());
        assertEquals(INVALID_VALUE, batch(2, 1), "a location hint (Gatun passes none)");
        assertEquals(0, gpu.queuedOperations(stream));
        assertEquals(0, api.cuStreamSynchronize(stream));
        assertArrayEquals(before, deviceBytes());
    }

    @Test
    void aRangeOutsideDeviceOrPinnedMemoryRefusesTheWholeBatch() {
        twoUploads();
        byte[] before = deviceBytes();
        sizes.setAtIndex(ValueLayout.JAVA_LONG, 1, N + 1); // past the device allocation and the pinned one
        assertEquals(INVALID_VALUE, batch(2, 1));
        twoUploads();
        srcs.setAtIndex(ValueLayout.JAVA_LONG, 1, arena.allocate(N).address()); // pageable memory
        assertEquals(INVALID_VALUE, batch(2, 1));
        twoUploads();
        sizes.setAtIndex(ValueLayout.JAVA_LONG, 0, 0);
        assertEquals(INVALID_VALUE, batch(2, 1), "a 0-byte copy");
        assertEquals(0, api.cuStreamSynchronize(stream));
        assertArrayEquals(before, deviceBytes(), "the valid first copy did not run either");
        assertEquals(INVALID_VALUE, api.cuMemcpyAsync(device, arena.allocate(N).address(), N, stream));
    }

    @Test
    void aCapturingStreamRefusesABatch() {
        twoUploads();
        assertEquals(0, api.cuStreamBeginCapture_v2(stream, CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL()));
        assertEquals(CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED(), batch(2, 1));
    }

    @Test
    void aDriverWithoutTheEntryPointCannotBeCalledThroughIt() {
        FakeDriverApi old = new FakeDriverApi().version(12090);
        MemorySegment nothing = MemorySegment.NULL;
        DriverTooOldException tooOld = assertThrows(DriverTooOldException.class,
                () -> old.api().cuMemcpyBatchAsync_v2(nothing, nothing, nothing, 1, nothing, nothing, 1, nothing));
        assertEquals(13000, tooOld.requiredVersion());
        assertEquals(12090, tooOld.installedVersion());
        FakeDriverApi without = new FakeDriverApi().withoutSymbol("cuMemcpyBatchAsync_v2");
        DriverTooOldException hidden = assertThrows(DriverTooOldException.class,
                () -> without.api().cuMemcpyBatchAsync_v2(nothing, nothing, nothing, 1, nothing, nothing, 1, nothing));
        assertTrue(hidden.getMessage().contains("CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND")
                || hidden.getMessage().contains("CUDA_ERROR_NOT_FOUND"), hidden.getMessage());
        assertEquals(0, old.batchCopyCalls() + without.batchCopyCalls());
    }
}
