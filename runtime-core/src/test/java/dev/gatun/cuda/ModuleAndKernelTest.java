package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.CubinBuilder;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FatbinBuilder;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

class ModuleAndKernelTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final ModuleRegistry modules = ctx.modules();

    /** saxpy(y, x, a, n): y[i] = a * x[i] + y[i], simulated on the host. */
    private void defineSaxpy() {
        sim.gpu.kernelBody("saxpy", l -> {
            int n = l.i32(3);
            var y = l.memory(l.pointer(0), 4L * n);
            var x = l.memory(l.pointer(1), 4L * n);
            float a = l.f32(2);
            for (int i = 0; i < n; i++) {
                y.setAtIndex(ValueLayout.JAVA_FLOAT, i, a * x.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                        + y.getAtIndex(ValueLayout.JAVA_FLOAT, i));
            }
        });
    }

    @Test
    void argumentsReachTheKernelAndUpdatesInPlaceAreSeenByLaterLaunches() {
        defineSaxpy();
        modules.load("blas", ModuleImage.ptx("saxpy.ptx", Ptx.module("saxpy", "u64", "u64", "f32", "u32")), "saxpy");
        try (Kernel k = modules.kernel("blas", "saxpy"); DeviceBuffer y = ctx.allocate(16); DeviceBuffer x = ctx.allocate(16)) {
            y.asFloats().copyFrom(new float[] {1, 1, 1, 1});
            x.asFloats().copyFrom(new float[] {1, 2, 3, 4});
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(y), KernelArg.pointer(x),
                    KernelArg.f32(2f), KernelArg.i32(4));
            launch.launch(ctx.computeStream());
            launch.setFloat(2, 10f).setInt(3, 2);
            launch.launch(ctx.computeStream());
            float[] out = new float[4];
            y.asFloats().copyTo(out);
            assertArrayEquals(new float[] {13, 25, 7, 9}, out);
        }
    }

    @Test
    void prepareOnAPoisonedContextFailsFastWithTheFirstError() {
        modules.load("blas", ModuleImage.ptx("saxpy.ptx", Ptx.module("saxpy", "u64", "u64", "f32", "u32")));
        try (Kernel warm = modules.kernel("blas", "saxpy"); Kernel cold = modules.kernel("blas", "saxpy");
                DeviceBuffer y = ctx.allocate(16)) {
            KernelArg[] args = {KernelArg.pointer(y), KernelArg.pointer(y), KernelArg.f32(2), KernelArg.i32(4)};
            warm.prepare(LaunchConfig.of(1, 32), args); // its launch target is built: no driver call from now on
            sim.faults.replaceOnce("cuMemcpyDtoDAsync_v2", 700);
            LogCapture.clear();
            CudaException first = assertThrows(CudaException.class, () -> ctx.computeStream().copy(y.bytes(), y.bytes()));
            LogCapture.expectPoisonedBy(first);
            for (Kernel k : List.of(warm, cold)) {
                ContextPoisonedException e = assertThrows(ContextPoisonedException.class,
                        () -> k.prepare(LaunchConfig.of(1, 32), args), "like every other call on a poisoned context");
                assertSame(first, e.firstError());
            }
        }
    }

    @Test
    void wrongArgumentCountsOrSizesAreRejectedBeforeLaunching() {
        modules.load("blas", ModuleImage.ptx("saxpy.ptx", Ptx.module("saxpy", "u64", "u64", "f32", "u32")));
        try (Kernel k = modules.kernel("blas", "saxpy"); DeviceBuffer y = ctx.allocate(16)) {
            IllegalArgumentException few = assertThrows(IllegalArgumentException.class,
                    () -> k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(y)));
            assertTrue(few.getMessage().contains("takes 4 parameters (8 bytes, 8 bytes, 4 bytes, 4 bytes), but 1"),
                    few.getMessage());
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 32),
                    KernelArg.pointer(y), KernelArg.pointer(y), KernelArg.f64(2), KernelArg.i32(4)));
            assertTrue(size.getMessage().contains("parameter 2 is 4 bytes"), size.getMessage());
            assertEquals(0, sim.gpu.launches());
            KernelLaunch ok = k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(y), KernelArg.pointer(y),
                    KernelArg.f32(2), KernelArg.i32(4));
            assertThrows(IllegalArgumentException.class, () -> ok.setInt(2, 1), "argument 2 is a float");
            assertThrows(IndexOutOfBoundsException.class, () -> ok.setInt(4, 1));
        }
    }

    @Test
    void withoutParamInfoTheCountCannotBeCheckedButLaunchesStillWork() {
        Simulated old = new Simulated(new FakeDriverApi().version(12020));
        CudaContext c = old.context();
        c.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u32")));
        try (Kernel k = c.modules().kernel("m", "k")) {
            assertTrue(k.parameters().isEmpty());
            k.launch(c.computeStream(), LaunchConfig.of(1, 1), KernelArg.i32(1));
            assertEquals(1, old.gpu.launches());
        }
    }

    @Test
    void configurationsTheDeviceCannotRunAreRejectedBeforeLaunching() {
        modules.load("m", ModuleImage.ptx("k.ptx", Ptx.module("k")));
        sim.gpu.staticSharedMemory("k", 4096);
        try (Kernel k = modules.kernel("m", "k")) {
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 2048)));
            assertThrows(IllegalArgumentException.class, () -> LaunchConfig.of(0, 32));
            IllegalArgumentException smem = assertThrows(IllegalArgumentException.class,
                    () -> k.prepare(LaunchConfig.of(1, 32).withSharedMemoryBytes(227 * 1024)));
            assertTrue(smem.getMessage().contains("at most " + (227 * 1024 - 4096)), smem.getMessage());
            IllegalArgumentException coop = assertThrows(IllegalArgumentException.class,
                    () -> k.prepare(LaunchConfig.of(100_000, 256).withCooperative(true)));
            assertTrue(coop.getMessage().contains("cannot be co-resident"), coop.getMessage());
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(6, 32).withCluster(4, 1, 1)));
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(16, 32).withCluster(16, 1, 1)));
            assertEquals(0, sim.gpu.launches());
        }
    }

    @Test
    void dynamicSharedMemoryAboveTheDefaultBudgetOptsTheFunctionIn() {
        modules.load("m", ModuleImage.ptx("k.ptx", Ptx.module("k")));
        try (Kernel k = modules.kernel("m", "k")) {
            assertEquals(0, k.attributes().maxDynamicSharedBytes());
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 32).withSharedMemoryBytes(100 * 1024));
            assertEquals(100 * 1024, k.attributes().maxDynamicSharedBytes());
            assertEquals(1, sim.gpu.launches());
        }
    }

    @Test
    void cooperativeAndClusterLaunchesUseTheirDriverEntryPoints() {
        modules.load("m", ModuleImage.ptx("k.ptx", Ptx.module("k")));
        sim.faults.countCalls();
        try (Kernel k = modules.kernel("m", "k")) {
            k.launch(ctx.computeStream(), LaunchConfig.of(132, 256).withCooperative(true));
            k.launch(ctx.computeStream(), LaunchConfig.of(8, 128).withCluster(2, 1, 1));
            assertEquals(66, k.maxActiveClusters(LaunchConfig.of(8, 128).withCluster(2, 1, 1)));
        }
        assertEquals(1, sim.faults.calls("cuLaunchCooperativeKernel"));
        assertEquals(1, sim.faults.calls("cuLaunchKernelEx"));
        assertEquals(0, sim.faults.calls("cuLaunchKernel"));
    }

    @Test
    void aReplacedModuleKeepsRunningForItsKernelsUntilTheyAndTheirLaunchesAreDone() {
        sim.gpu.kernelBody("k", l -> l.memory(l.pointer(0), 4).set(ValueLayout.JAVA_INT, 0, l.i32(1)));
        ModuleInfo first = modules.load("m", ModuleImage.ptx("v1.ptx", Ptx.module("k", "u64", "u32")));
        Kernel old = modules.kernel("m", "k");
        ModuleInfo second = modules.load("m", ModuleImage.ptx("v2.ptx", Ptx.module("k", "u64", "u32") + "// v2\n"));
        assertEquals(2, second.generation());
        assertNotEquals(first.sha256(), second.sha256());
        assertEquals(first.sha256(), old.moduleSha256(), "the old kernel still runs the old image");
        assertEquals(2, sim.gpu.liveModules());
        Stream s = ctx.createStream();
        try (DeviceBuffer out = ctx.allocate(4)) {
            sim.gpu.hold(s.handle());
            old.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(out), KernelArg.i32(7));
            old.close();
            ctx.reap();
            assertEquals(2, sim.gpu.liveModules(), "its queued launch still needs the old module");
            sim.gpu.release(s.handle());
            ctx.reap();
            assertEquals(1, sim.gpu.liveModules());
            int[] v = new int[1];
            out.asInts().copyTo(v);
            assertEquals(7, v[0]);
        }
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aFailedLoadLeavesThePreviousEntryUntouched() {
        ModuleInfo good = modules.load("m", ModuleImage.ptx("good.ptx", Ptx.module("k")));
        String newerIsa = Ptx.module("k").replace(".version 8.5", ".version 99.0");
        assertThrows(CudaException.class, () -> modules.load("m", ModuleImage.ptx("bad.ptx", newerIsa)));
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> modules.load("m", ModuleImage.ptx("other.ptx", Ptx.module("other")), "k"));
        assertTrue(missing.getMessage().contains("has no kernel 'k'"), missing.getMessage());
        assertEquals(good, modules.info("m").orElseThrow());
        assertEquals(1, sim.gpu.liveModules(), "the rejected image was unloaded again");
        try (Kernel k = modules.kernel("m", "k")) {
            assertEquals("k", k.name());
        }
        assertThrows(IllegalArgumentException.class, () -> modules.kernel("m", "nope"));
        assertThrows(IllegalArgumentException.class, () -> modules.kernel("absent", "k"));
    }

    @Test
    void imagesAreRecognizedAndDigested() {
        ModuleImage ptx = ModuleImage.of("a", ".version 8.5\n.target sm_90\n".getBytes());
        assertEquals(ModuleImage.Kind.PTX, ptx.kind());
        byte[] cubin = CubinBuilder.cubin("k", Ptx.module("k"));
        assertEquals(ModuleImage.Kind.CUBIN, ModuleImage.of("b", cubin).kind());
        assertEquals(ModuleImage.Kind.FATBIN, ModuleImage.of("c", FatbinBuilder.fatbin(FatbinBuilder.Entry.elf(90, cubin))).kind());
        assertEquals("ac12b2113d50aa036943ccd61ffe6d89215cad875e282384b7e5674d4692fb94", ptx.sha256());
        byte[] loadable = ptx.loadableBytes();
        assertEquals(0, loadable[loadable.length - 1], "PTX is handed to the driver NUL-terminated");
        assertThrows(IllegalArgumentException.class, () -> ModuleImage.of("empty", new byte[0]));
    }

    @Test
    void launchingOnAClosedOrForeignStreamOrAfterCloseIsATypedError() {
        Simulated two = new Simulated(new FakeDriverApi().deviceCount(2));
        CudaContext a = two.cuda.device(0).context();
        CudaContext b = two.cuda.device(1).context();
        a.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k")));
        Kernel k = a.modules().kernel("m", "k");
        KernelLaunch launch = k.prepare(LaunchConfig.of(1, 1));
        Stream closed = a.createStream();
        closed.close();
        assertThrows(IllegalStateException.class, () -> launch.launch(closed));
        ContextTest.assertMismatch(() -> launch.launch(b.computeStream()));
        k.close();
        assertThrows(IllegalStateException.class, () -> launch.launch(a.computeStream()));
        assertEquals(0, two.gpu.launches());
    }

    @Test
    void aLaunchWhoseOutcomeIsUncertainRefusesToRunUntilItsStreamIsIdle() {
        modules.load("m", ModuleImage.ptx("k.ptx", Ptx.module("k")));
        Stream s = ctx.createStream();
        try (Kernel k = modules.kernel("m", "k")) {
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 1));
            sim.gpu.hold(s.handle());
            sim.faults.overrideOnce("cuLaunchKernel", 999); // queued, but reported as failed
            CudaException e = assertThrows(CudaException.class, () -> launch.launch(s));
            assertEquals("CUDA_ERROR_UNKNOWN", e.resultName());
            assertEquals("CUDA_ERROR_UNKNOWN", launch.uncertainFailure().orElseThrow());
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> launch.launch(s));
            assertTrue(refused.getMessage().contains("synchronize it"), refused.getMessage());
            s.synchronize();
            launch.launch(s);
            assertTrue(launch.uncertainFailure().isEmpty());
            assertEquals(2, sim.gpu.launches());
        }
        s.close();
    }
}
