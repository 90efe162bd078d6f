package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Launch inputs that cannot work are refused with a typed error, before any driver launch. */
class LaunchChecksTest {

    private final Simulated sim = new Simulated(new FakeDriverApi()
            .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X(), 1024)
            .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y(), 1024)
            .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z(), 64)
            .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y(), 65_535)
            .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z(), 65_535));
    private final CudaContext ctx = sim.context();

    LaunchChecksTest() {
        sim.gpu.kernelBody("store", l -> l.memory(l.pointer(0), 4).set(ValueLayout.JAVA_INT, 0, l.i32(1)));
        ctx.modules().load("m", ModuleImage.ptx("store.ptx", Ptx.module("store", "u64", "u32")));
    }

    private <T extends Throwable> T refused(Class<T> type, Executable call, String... phrases) {
        T e = assertThrows(type, call);
        for (String phrase : phrases) {
            assertTrue(e.getMessage().contains(phrase), () -> "'" + phrase + "' missing from: " + e.getMessage());
        }
        return e;
    }

    private static int read(DeviceBuffer b) {
        int[] out = new int[1];
        b.asInts().copyTo(out);
        return out[0];
    }

    @Test
    void aNullViewOrBufferIsRefusedAndTheDeliberateNullPointerIsAddressZero() {
        refused(NullPointerException.class, () -> KernelArg.pointer((DeviceView) null), "KernelArg.address(0)");
        refused(NullPointerException.class, () -> KernelArg.pointer((DeviceBuffer) null), "KernelArg.address(0)");
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4)) {
            refused(NullPointerException.class, () -> k.prepare(LaunchConfig.of(1, 1), null, KernelArg.i32(1)),
                    "argument 0", "KernelArg.address(0)");
            refused(NullPointerException.class, () -> k.prepare(null, KernelArg.pointer(out), KernelArg.i32(1)),
                    "LaunchConfig");
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(out), KernelArg.i32(5));
            refused(NullPointerException.class, () -> launch.setPointer(0, null), "KernelArg.address(0)");
            assertEquals(0, sim.gpu.launches());
            launch.launch(ctx.computeStream());
            assertEquals(5, read(out), "the refused update left the argument as it was");
            // A deliberate NULL reaches the kernel only when asked for by its address.
            AtomicLong received = new AtomicLong(-1);
            sim.gpu.kernelBody("store", l -> received.set(l.pointer(0)));
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 1), KernelArg.address(0), KernelArg.i32(1));
            assertEquals(2, sim.gpu.launches());
            assertEquals(0, received.get());
        }
    }

    @Test
    void coveringRefusesNegativeOrZeroElementsAndBlocks() {
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(-5, 256), "-5", "negative");
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(0, 256), "no elements", "skip the launch");
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(10, 0), "block", "at least 1 thread");
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(10, -32), "block", "at least 1 thread");
        assertEquals(LaunchConfig.of(1, 256), LaunchConfig.covering(1, 256));
        assertEquals(LaunchConfig.of(1, 256), LaunchConfig.covering(256, 256));
        assertEquals(LaunchConfig.of(2, 256), LaunchConfig.covering(257, 256));
    }

    @Test
    void coveringRefusesAGridBeyondTwoToTheThirtyOneBlocksEvenWhereTheCountWouldOverflow() {
        long most = (long) Integer.MAX_VALUE * 256;
        assertEquals(Integer.MAX_VALUE, LaunchConfig.covering(most, 256).gridX());
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(most + 1, 256), "2^31-1");
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(Long.MAX_VALUE, 256), "2^31-1");
        refused(IllegalArgumentException.class, () -> LaunchConfig.covering(Long.MAX_VALUE - 3, Integer.MAX_VALUE), "2^31-1");
    }

    /** The same configuration through each launch path: plain, cooperative, and cuLaunchKernelEx (cluster). */
    private void refusedOnEveryPath(LaunchConfig config, String... phrases) {
        sim.faults.countCalls();
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4)) {
            for (Function<LaunchConfig, LaunchConfig> path : List.<Function<LaunchConfig, LaunchConfig>>of(
                    c -> c, c -> c.withCooperative(true), c -> c.withCluster(1, 1, 1))) {
                LaunchConfig variant = path.apply(config);
                refused(IllegalArgumentException.class, () -> k.launch(ctx.computeStream(), variant, KernelArg.pointer(out),
                        KernelArg.i32(1)), phrases);
            }
        }
        assertEquals(0, sim.gpu.launches());
        assertEquals(0, sim.faults.calls("cuLaunchKernel") + sim.faults.calls("cuLaunchCooperativeKernel")
                + sim.faults.calls("cuLaunchKernelEx"));
    }

    @Test
    void aBlockAxisOverTheDevicesLimitIsRefusedOnEveryLaunchPath() {
        refusedOnEveryPath(LaunchConfig.of(1, 1, 1, 2, 2, 128), "block z", "128", "64");
    }

    @Test
    void aGridAxisOverTheDevicesLimitIsRefusedOnEveryLaunchPath() {
        refusedOnEveryPath(LaunchConfig.of(1, 65_536, 1, 32, 1, 1), "grid y", "65536", "65535");
        refusedOnEveryPath(LaunchConfig.of(1, 1, 70_000, 32, 1, 1), "grid z", "70000", "65535");
    }

    @Test
    void theLimitsAreTheDevicesOwnPerAxis() {
        Simulated small = new Simulated(new FakeDriverApi()
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X(), 512)
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y(), 8)
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X(), 1000)
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y(), 100)
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z(), 10));
        CudaContext c = small.context();
        c.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k")));
        try (Kernel k = c.modules().kernel("m", "k")) {
            refused(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 513)), "block x", "513", "512");
            refused(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 1, 1, 1, 9, 1)), "block y", "9", "8");
            refused(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1001, 32)), "grid x", "1001", "1000");
            refused(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 101, 1, 32, 1, 1)), "grid y", "101",
                    "100");
            refused(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 1, 11, 32, 1, 1)), "grid z", "11",
                    "10");
            assertEquals(0, small.gpu.launches());
            k.launch(c.computeStream(), LaunchConfig.of(1000, 1, 10, 512, 1, 1));
            assertEquals(1, small.gpu.launches());
        }
    }

    @Test
    void aValidLaunchStillWorksAfterRefusedOnes() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4)) {
            assertThrows(IllegalArgumentException.class, () -> k.launch(ctx.computeStream(), LaunchConfig.of(1, 1, 1, 1, 1, 65),
                    KernelArg.pointer(out), KernelArg.i32(1)));
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 1, 1, 1, 1, 64), KernelArg.pointer(out), KernelArg.i32(9));
            assertEquals(9, read(out));
            assertEquals(1, sim.gpu.launches());
        }
    }
}
