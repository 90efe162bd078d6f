package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Each warmed hot-path operation makes exactly the driver calls its C equivalent makes: no
 * cuCtxGetCurrent, no extra record or query, nothing for the driver's error log (whose lines
 * come through a callback, and are taken only when a call fails). Every operation is done once
 * to warm it (pooled events, a pinned buffer's own fence event, the stream lists of the
 * buffers), then counted.
 */
class DriverCallsPerOperationTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();

    @AfterEach
    void closeStream() {
        stream.close();
    }

    @Test
    void aWarmedLaunchIsOneCuLaunchKernel() {
        ctx.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32")));
        try (Kernel k = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(128)) {
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(b), KernelArg.i32(7));
            launch.launch(stream);
            assertEquals(Map.of("cuLaunchKernel", 1), sim.faults.callsOf(() -> launch.launch(stream)));
        }
    }

    @Test
    void aWarmedProgrammaticDependentLaunchIsOneCuLaunchKernelEx() {
        ctx.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32")));
        try (Kernel k = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(128)) {
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32).withProgrammaticStreamSerialization(true).withPriority(-1),
                    KernelArg.pointer(b), KernelArg.i32(7));
            launch.launch(stream);
            assertEquals(Map.of("cuLaunchKernelEx", 1), sim.faults.callsOf(() -> launch.launch(stream)));
        }
    }

    @Test
    void aRefusalTakesTheDriversLogLinesWithoutADriverCall() {
        ctx.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32")));
        try (Kernel k = ctx.modules().kernel("m", "fill")) {
            KernelAttribute maxDynamicShared = KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES;
            CudaException[] refused = new CudaException[1];
            Map<String, Integer> calls = sim.faults.callsOf(() -> refused[0] = assertThrows(CudaException.class,
                    () -> k.setAttribute(maxDynamicShared, 300_000)));
            assertEquals(1, refused[0].driverLog().size(), "the simulated driver explains this refusal");
            assertEquals(Map.of("cuCtxGetCurrent", 1, "cuFuncSetAttribute", 1, "cuGetErrorString", 1), calls,
                    "the refused call, and its description; the lines came through the callback");
        }
    }

    @Test
    void aWarmedLaunchEventRecordAndQueryAfterALoggedRefusalMakeNoOtherCall() {
        ctx.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32")));
        try (Kernel k = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(128); Event e = ctx.createEvent()) {
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(b), KernelArg.i32(7));
            launch.launch(stream);
            e.record(stream);
            e.query();
            assertThrows(CudaException.class, () -> k.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    300_000));
            assertEquals(Map.of("cuLaunchKernel", 1, "cuEventRecord", 1, "cuEventQuery", 1), sim.faults.callsOf(() -> {
                launch.launch(stream);
                e.record(stream);
                e.query();
            }));
        }
    }

    @Test
    void aSecondPrepareOfAKernelMakesNoDriverCall() {
        ctx.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32")));
        try (Kernel k = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(128)) {
            k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(b), KernelArg.i32(7));
            assertEquals(Map.of(), sim.faults.callsOf(() -> k.prepare(LaunchConfig.of(2, 64), KernelArg.pointer(b), KernelArg.i32(8))),
                    "the limits, attributes and parameter list are read once per kernel");
        }
    }

    @Test
    void aWarmedEventRecordAndQueryAreOneCuEventRecordAndOneCuEventQuery() {
        try (Event e = ctx.createEvent()) {
            e.record(stream);
            e.query();
            assertEquals(Map.of("cuEventRecord", 1, "cuEventQuery", 1), sim.faults.callsOf(() -> {
                e.record(stream);
                e.query();
            }));
        }
    }

    @Test
    void aWarmedDeviceToDeviceCopyIsOneCuMemcpyDtoDAsync() {
        try (DeviceBuffer a = ctx.allocate(256); DeviceBuffer b = ctx.allocate(256)) {
            stream.copy(b.bytes(), a.bytes());
            assertEquals(Map.of("cuMemcpyDtoDAsync_v2", 1), sim.faults.callsOf(() -> stream.copy(b.bytes(), a.bytes())));
        }
    }

    @Test
    void aWarmedPinnedUploadIsOneCopyAndItsFence() {
        try (PinnedBuffer pinned = ctx.allocatePinned(256); DeviceBuffer b = ctx.allocate(256)) {
            stream.upload(b.bytes(), pinned, 0);
            pinned.awaitTransfer();
            assertEquals(Map.of("cuMemcpyHtoDAsync_v2", 1, "cuEventRecord", 1),
                    sim.faults.callsOf(() -> stream.upload(b.bytes(), pinned, 0)));
        }
    }

    /** asyncAPI's download back into the buffer it uploaded from: what a warmed upload costs, with no host wait for the upload. */
    @Test
    void aPinnedDownloadQueuedBehindAnUploadThroughTheSameBufferOnTheSameStreamIsOneCopyAndItsFence() {
        try (PinnedBuffer pinned = ctx.allocatePinned(256); DeviceBuffer b = ctx.allocate(256)) {
            stream.upload(b.bytes(), pinned, 0);
            stream.download(pinned, 0, b.bytes());
            stream.upload(b.bytes(), pinned, 0);
            assertEquals(Map.of("cuMemcpyDtoHAsync_v2", 1, "cuEventRecord", 1),
                    sim.faults.callsOf(() -> stream.download(pinned, 0, b.bytes())), "stream order follows the upload");
        }
    }

    @Test
    void aPinnedTransferBehindOneOnAnotherStreamAddsOneCuStreamWaitEvent() {
        try (PinnedBuffer pinned = ctx.allocatePinned(256); DeviceBuffer b = ctx.allocate(256); Stream other = ctx.createStream()) {
            other.upload(b.bytes(), pinned, 0);
            stream.download(pinned, 0, b.bytes());
            other.upload(b.bytes(), pinned, 0);
            assertEquals(Map.of("cuStreamWaitEvent", 1, "cuMemcpyDtoHAsync_v2", 1, "cuEventRecord", 1),
                    sim.faults.callsOf(() -> stream.download(pinned, 0, b.bytes())), "a GPU wait on the upload's fence");
        }
    }

    @Test
    void aStreamOrderedAllocationIsOneCuMemAllocAsync() {
        stream.allocate(256).close();
        DeviceBuffer[] allocated = new DeviceBuffer[1];
        assertEquals(Map.of("cuMemAllocAsync", 1), sim.faults.callsOf(() -> allocated[0] = stream.allocate(256)));
        allocated[0].close();
    }

    @Test
    void aStreamOrderedFreeIsOneCuMemFreeAsyncWhenNoCaptureIsPossible() {
        stream.allocate(256).close();
        DeviceBuffer b = stream.allocate(256);
        assertEquals(Map.of("cuMemFreeAsync", 1), sim.faults.callsOf(b::close));
    }

    @Test
    void aSmallHeapReadbackIsOneCopyAndOneStreamSynchronize() {
        try (DeviceBuffer b = ctx.allocate(4)) {
            int[] word = new int[1];
            b.asInts().copyTo(word);
            assertEquals(Map.of("cuMemcpyDtoHAsync_v2", 1, "cuStreamSynchronize", 1), sim.faults.callsOf(() -> b.asInts().copyTo(word)));
            assertEquals(Map.of("cuMemcpyHtoDAsync_v2", 1, "cuStreamSynchronize", 1),
                    sim.faults.callsOf(() -> b.asInts().copyFrom(new int[] {7})));
        }
    }

    @Test
    void aStreamQueryIsOneCuStreamQuery() {
        stream.query();
        assertEquals(Map.of("cuStreamQuery", 1), sim.faults.callsOf(stream::query));
    }

    @Test
    void aStreamSynchronizeIsOneCuStreamSynchronize() {
        stream.synchronize();
        assertEquals(Map.of("cuStreamSynchronize", 1), sim.faults.callsOf(stream::synchronize));
    }

    /** The alloc_stream_ordered twin's operation, whole: C's two calls, nothing between them. */
    @Test
    void aWarmedStreamOrderedAllocateAndCloseAreOneCuMemAllocAsyncAndOneCuMemFreeAsync() {
        stream.allocate(1 << 20).close();
        assertEquals(Map.of("cuMemAllocAsync", 1, "cuMemFreeAsync", 1),
                sim.faults.callsOf(() -> stream.allocate(1 << 20).close()));
    }

    /**
     * The alloc_unpooled twin's operation (Gatun's device pool off): C's cuMemAlloc and cuMemFree,
     * each after a cuCtxGetCurrent that C does not make (Checked.current and currentForRaw make
     * the context current on the calling carrier; see runtime-bench/README.md, "Where each row's
     * time above C goes"). A change that removes them, or adds a call, changes this count.
     */
    @Test
    void aWarmedUnpooledAllocateAndCloseAreCuMemAllocAndCuMemFreeEachAfterACurrentContextCheck() {
        Simulated unpooled = new Simulated();
        CudaContext off = unpooled.cuda.device(0).context(ContextOptions.defaults()
                .withDevicePool(new DevicePoolOptions(0, false)));
        off.allocate(1 << 20).close();
        assertEquals(Map.of("cuCtxGetCurrent", 2, "cuMemAlloc_v2", 1, "cuMemFree_v2", 1),
                unpooled.faults.callsOf(() -> off.allocate(1 << 20).close()));
    }

    /** The alloc_from_pool twin's pool keeps what is freed (release threshold: all of it); the same two calls. */
    @Test
    void aWarmedAllocateAndCloseFromAPoolThatKeepsItsMemoryAreOneAllocFromPoolAndOneFree() {
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE))) {
            pool.allocate(stream, 1 << 20).close();
            assertEquals(Map.of("cuMemAllocFromPoolAsync", 1, "cuMemFreeAsync", 1),
                    sim.faults.callsOf(() -> pool.allocate(stream, 1 << 20).close()));
        }
    }

    @Test
    void aWarmedPoolAllocateAndCloseAreOneAllocFromPoolAndOneFree() {
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults())) {
            pool.allocate(stream, 256).close();
            assertEquals(Map.of("cuMemAllocFromPoolAsync", 1, "cuMemFreeAsync", 1),
                    sim.faults.callsOf(() -> pool.allocate(stream, 256).close()));
        }
    }
}
