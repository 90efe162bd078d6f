package dev.gatun.cuda.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.testkit.GpuOrSimulated;
import dev.gatun.testkit.GpuUnderTest;
import dev.gatun.testkit.JavaKernel;
import dev.gatun.testkit.KernelCode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link MiniEngine}'s scheduling, graph-slot logic and error handling, tested with
 * gatun-testkit: on the simulated driver in CI (where the kernels are the Java bodies below), on
 * device 0 where a GPU is present (where they are the CUDA sources, compiled with NVRTC).
 * {@code -Dgatun.testkit.target=simulated|gpu} chooses. After each test the extension closes
 * the context and fails the test if anything was left open.
 */
@GpuOrSimulated
class MiniEngineTest {

    private static final float A = 0.75f;
    private static final int CHUNK = 4096;

    private GpuUnderTest gpu;
    private Kernel scale;
    private Kernel add;
    private Stream prep;
    private Stream compute;
    private long seed;
    private Random random;

    /** What {@link MiniEngine#SCALE_SOURCE} computes: mid = a * x. */
    static void scale(JavaKernel.Launch launch) {
        int n = launch.i32(3);
        MemorySegment mid = launch.buffer(0, 4L * n);
        MemorySegment x = launch.buffer(1, 4L * n);
        for (int i = 0; i < n; i++) {
            mid.setAtIndex(ValueLayout.JAVA_FLOAT, i, launch.f32(2) * x.getAtIndex(ValueLayout.JAVA_FLOAT, i));
        }
    }

    /** What {@link MiniEngine#ADD_SOURCE} computes: y = mid + x. */
    static void add(JavaKernel.Launch launch) {
        int n = launch.i32(3);
        MemorySegment y = launch.buffer(0, 4L * n);
        MemorySegment mid = launch.buffer(1, 4L * n);
        MemorySegment x = launch.buffer(2, 4L * n);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(ValueLayout.JAVA_FLOAT, i, mid.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                    + x.getAtIndex(ValueLayout.JAVA_FLOAT, i));
        }
    }

    @BeforeEach
    void setUp(GpuUnderTest gpu) {
        this.gpu = gpu;
        // Every allocation reaches the driver (no pool in front), where the faults below can fail it.
        CudaContext ctx = gpu.contextOptions(ContextOptions.defaults().withLeakTracking(true)
                .withDevicePool(new DevicePoolOptions(0, false))).context();
        scale = gpu.kernel("scale", KernelCode.cuda(MiniEngine.SCALE_SOURCE), MiniEngineTest::scale);
        add = gpu.kernel("add", KernelCode.cuda(MiniEngine.ADD_SOURCE), MiniEngineTest::add);
        prep = ctx.createStream();
        compute = ctx.createStream();
        seed = System.nanoTime();
        random = new Random(seed);
    }

    @AfterEach
    void tearDown() {
        scale.close();
        add.close();
        prep.close();
        compute.close();
    }

    private MiniEngine engine() {
        return new MiniEngine(gpu.context(), scale, add, A, prep, compute, CHUNK);
    }

    /** A request of random length (over several chunks, the last one short) and random values, none zero. */
    private float[] request() {
        float[] x = new float[2 * CHUNK + 1 + random.nextInt(CHUNK - 1)];
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat() + 0.5f;
        }
        return x;
    }

    /** What the engine must answer, computed on the CPU as the two kernels round: each stage once. */
    private static float[] expected(float[] x) {
        float[] y = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            float mid = A * x[i];
            y[i] = mid + x[i];
        }
        return y;
    }

    /** An answer array whose every element shows if the engine does not write it. */
    private static float[] poisoned(int length) {
        float[] y = new float[length];
        Arrays.fill(y, Float.NaN);
        return y;
    }

    // ---- scheduling ----

    @Test
    void servesARequestOnTwoStreamsChunkByChunk() {
        float[] x = request();
        float[] y = poisoned(x.length);
        try (MiniEngine engine = engine()) {
            engine.serve(x, y);
        }
        assertArrayEquals(expected(x), y, gpu + ", seed " + seed);
    }

    @Test
    void theComputeStreamWaitsForThePrepStreamsEvent() {
        float[] x = request();
        float[] y = poisoned(x.length);
        try (MiniEngine engine = engine()) {
            // On the simulator nothing on the prep stream runs until the request is served, unless
            // something waits for it: an add that did not wait for scale would read mid unwritten.
            gpu.holdWhile(prep, () -> engine.serve(x, y));
        }
        assertArrayEquals(expected(x), y, gpu + ", seed " + seed);
    }

    // ---- the graph slot ----

    @Test
    void capturesTheStepOnceAndReplaysItForEveryChunk() {
        try (MiniEngine engine = engine()) {
            for (int request = 0; request < 3; request++) {
                float[] x = request();
                float[] y = poisoned(x.length);
                engine.serveReplayed(x, y);
                assertArrayEquals(expected(x), y, gpu + ", request " + request + ", seed " + seed);
            }
            assertEquals(1, engine.captures(), "captured on the first request only");
            assertEquals(9, engine.replays(), "three chunks per request");
        }
    }

    @Test
    void eagerAndReplayedRequestsShareTheWorkspace() {
        try (MiniEngine engine = engine()) {
            float[] x = request();
            float[] eager = poisoned(x.length);
            float[] replayed = poisoned(x.length);
            engine.serve(x, eager);
            engine.serveReplayed(x, replayed);
            assertArrayEquals(eager, replayed, gpu + ", seed " + seed);
            assertArrayEquals(expected(x), replayed, gpu + ", seed " + seed);
        }
    }

    // ---- errors ----

    @Test
    void runningOutOfMemoryHalvesTheChunkAndTheRequestIsStillServed() {
        float[] x = request();
        float[] y = poisoned(x.length);
        try (MiniEngine engine = engine()) {
            // The workspace's first allocation fails, and the out-of-memory ladder's retry of it too.
            gpu.faults().failCalls("cuMemAlloc_v2", 1, 2, CudaDriver.CUDA_ERROR_OUT_OF_MEMORY());
            engine.serve(x, y);
            assertEquals(CHUNK / 2, engine.chunkElements());
        }
        assertArrayEquals(expected(x), y, gpu + ", seed " + seed);
        assertEquals(6, gpu.faults().calls("cuMemAlloc_v2"),
                "the graphs' latch word, two refused, then x, mid and y at half the size");
    }

    @Test
    void aDeviceThatStaysFullEndsTheRequestWithTheDriversErrorAndLeavesNothingAllocated() {
        float[] x = request();
        try (MiniEngine engine = engine()) {
            long buffers = gpu.context().diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER); // the graphs' latch word
            gpu.faults().failFrom("cuMemAlloc_v2", 3, CudaDriver.CUDA_ERROR_OUT_OF_MEMORY()); // x and mid fit, y never
            OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class,
                    () -> engine.serve(x, poisoned(x.length)));
            assertEquals(4L * MiniEngine.MIN_CHUNK_ELEMENTS, e.requestedBytes(), "it shrank as far as it goes");
            assertEquals(buffers, gpu.context().diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "every partial workspace was closed");
        }
    }

    @Test
    void aStickyLaunchErrorPoisonsTheContextAndTheEngineStillClosesCleanly() {
        float[] x = request();
        try (MiniEngine engine = engine()) {
            gpu.faults().failCall("cuLaunchKernel", 2, CudaDriver.CUDA_ERROR_LAUNCH_FAILED()); // the first add
            CudaException e = assertThrows(CudaException.class, () -> engine.serve(x, poisoned(x.length)));
            assertEquals("CUDA_ERROR_LAUNCH_FAILED", e.resultName());
            assertTrue(gpu.context().diagnostics().poisonedBy().isPresent());
            assertThrows(ContextPoisonedException.class, () -> engine.serve(x, poisoned(x.length)),
                    "every later request fails fast: only a new process recovers the device");
        }
    }
}
