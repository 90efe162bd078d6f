package example.kernelbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.Stream;
import dev.gatun.testkit.GpuOrSimulated;
import dev.gatun.testkit.GpuUnderTest;
import dev.gatun.testkit.JavaKernel;
import dev.gatun.testkit.KernelCode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * What the benchmark measures does its job: the prepared launch computes y = a * x + y, launch
 * after launch, on the simulated driver without a GPU (CI) and on device 0 with one (where the
 * kernel is the CUDA source, compiled by NVRTC). gatun-testkit chooses (testkit/README.md).
 */
@GpuOrSimulated
class SaxpyTest {

    /** What {@link Saxpy#SOURCE} computes, for the simulator: once per launch, over all n elements. */
    static void saxpy(JavaKernel.Launch launch) {
        int n = launch.i32(3);
        float a = launch.f32(2);
        MemorySegment y = launch.buffer(0, 4L * n);
        MemorySegment x = launch.buffer(1, 4L * n);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(ValueLayout.JAVA_FLOAT, i,
                    a * x.getAtIndex(ValueLayout.JAVA_FLOAT, i) + y.getAtIndex(ValueLayout.JAVA_FLOAT, i));
        }
    }

    @Test
    void thePreparedLaunchComputesSaxpyEveryTime(GpuUnderTest gpu) {
        int n = 100_003; // not a multiple of the block: the last block is partial
        try (Kernel kernel = gpu.kernel(Saxpy.FUNCTION, KernelCode.cuda(Saxpy.SOURCE), SaxpyTest::saxpy);
                Saxpy saxpy = new Saxpy(gpu.context(), kernel, n, 2f, 7);
                Stream stream = gpu.context().createStream()) {
            assertMatches(saxpy.expected(0), saxpy.result(), "before any launch, on " + gpu);
            for (int launches = 1; launches <= 3; launches++) {
                saxpy.launch().launch(stream);
                stream.synchronize();
                assertMatches(saxpy.expected(launches), saxpy.result(), "after " + launches + " launches on " + gpu);
            }
        }
    }

    private static void assertMatches(float[] expected, float[] got, String when) {
        assertEquals(expected.length, got.length, when);
        for (int i = 0; i < expected.length; i++) {
            // The GPU may fuse a * x + y into one rounding (an FMA) where Java rounds twice.
            assertTrue(Math.abs(got[i] - expected[i]) <= 1e-5f * Math.max(1f, Math.abs(expected[i])),
                    when + ": y[" + i + "] is " + got[i] + ", not " + expected[i]);
        }
    }
}
