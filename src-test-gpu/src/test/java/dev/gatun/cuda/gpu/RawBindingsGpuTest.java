package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The generated bindings called raw, the escape hatch for driver functions Gatun does not wrap:
 * they reach the driver and NVRTC Gatun loaded, and work on the handles of Gatun's owners.
 */
@RequiresGpu
class RawBindingsGpuTest {

    private static final int POISON = 0xDEADBEEF;

    @Test
    void rawCuDriverGetVersionIsTheVersionGatunReports() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment version = arena.allocate(ValueLayout.JAVA_INT);
            version.set(ValueLayout.JAVA_INT, 0, POISON);
            // Safety: the driver writes one int into version, which lives in the arena for the call.
            assertEquals(CudaDriver.CUDA_SUCCESS(), CudaDriver.cuDriverGetVersion(version));
            assertEquals(Cuda.system().driverVersion().encoded(), version.get(ValueLayout.JAVA_INT, 0));
        }
    }

    @Test
    void rawNvrtcVersionIsTheVersionGatunReports() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
            major.set(ValueLayout.JAVA_INT, 0, POISON);
            minor.set(ValueLayout.JAVA_INT, 0, POISON);
            // Safety: NVRTC writes one int into each, both alive in the arena for the call.
            assertEquals(Nvrtc.NVRTC_SUCCESS(), Nvrtc.nvrtcVersion(major, minor));
            NvrtcLibrary nvrtc = NvrtcLibrary.system();
            assertEquals(nvrtc.majorVersion(), major.get(ValueLayout.JAVA_INT, 0));
            assertEquals(nvrtc.minorVersion(), minor.get(ValueLayout.JAVA_INT, 0));
        }
    }

    @Test
    void rawMemsetOnAGatunStreamAndBufferIsWhatGatunReadsBack() {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = 1 + random.nextInt(1 << 20);
        int from = random.nextInt(n);
        int count = 1 + random.nextInt(n - from);
        int value = random.nextInt();
        if (value == POISON) {
            value = ~POISON;
        }
        CudaContext ctx = Gpu.context();
        try (Stream stream = ctx.createStream(); DeviceBuffer buffer = ctx.allocate(4L * n);
                Arena arena = Arena.ofConfined()) {
            stream.fill(buffer.asInts(), POISON);
            // handle() marks the stream exported: Gatun's synchronous readback below orders after
            // work queued on it behind Gatun's back.
            MemorySegment rawStream = stream.handle();
            MemorySegment owner = arena.allocate(ValueLayout.ADDRESS);
            // Safety: the stream is open for the call; the driver writes one CUcontext into owner.
            assertEquals(CudaDriver.CUDA_SUCCESS(), CudaDriver.cuStreamGetCtx(rawStream, owner));
            assertEquals(ctx.handle().address(), owner.get(ValueLayout.ADDRESS, 0).address(),
                    "the stream's context is Gatun's");
            // Safety: [from, from + count) ints lie inside the buffer, which stays open (and so
            // allocated) until after the readback below has waited for the memset.
            assertEquals(CudaDriver.CUDA_SUCCESS(),
                    CudaDriver.cuMemsetD32Async(buffer.address() + 4L * from, value, count, rawStream));
            int[] expected = new int[n];
            Arrays.fill(expected, POISON);
            Arrays.fill(expected, from, from + count, value);
            int[] out = new int[n];
            buffer.asInts().copyTo(out);
            assertArrayEquals(expected, out, "memset [" + from + ", " + (from + count) + ") of " + n + ", seed=" + seed);
        }
    }
}
