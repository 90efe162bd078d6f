package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Green contexts ({@link Device#partitionSms}) and kernel libraries ({@link KernelLibrary}) on the
 * simulated driver: the split, the streams made for each green context, the owner rules of a
 * context, kernels of one library in every context, and a graph captured on a green stream.
 */
class GreenContextTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Device device = ctx.device();

    private void defineFill() {
        sim.gpu.kernelBody("fill", l -> {
            var p = l.memory(l.pointer(0), 4L * l.i32(1));
            for (int i = 0; i < l.i32(1); i++) {
                p.setAtIndex(ValueLayout.JAVA_INT, i, l.i32(2) + i);
            }
        });
    }

    private static final ModuleImage FILL = ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32", "u32"));

    private static int[] filled(int base) {
        int[] out = new int[16];
        for (int i = 0; i < out.length; i++) {
            out[i] = base + i;
        }
        return out;
    }

    private static int[] runFill(Kernel k, CudaContext on, int base) {
        try (DeviceBuffer b = on.allocate(64)) {
            b.asInts().copyFrom(new int[16]); // zeros, which no fill with base > 0 writes
            k.launch(on.computeStream(), LaunchConfig.of(1, 16), KernelArg.pointer(b), KernelArg.i32(16), KernelArg.i32(base));
            int[] out = new int[16];
            b.asInts().copyTo(out);
            return out;
        }
    }

    @Test
    void theSmsSplitIntoGreenContextsOfRoundedGroupsAndARemainder() {
        try (SmPartition p = device.partitionSms(60, 2)) {
            assertEquals(2, p.groups().size());
            for (CudaContext g : p.groups()) {
                assertTrue(g.isGreen());
                assertEquals(64, g.smCount(), "60 rounded up to the 8-SM granularity");
                assertEquals(64, sim.gpu.greenSmCount(g.handle()), "the driver's green context has those SMs");
                assertNotEquals(ctx.handle(), g.handle());
            }
            CudaContext rest = p.remainder().orElseThrow();
            assertEquals(132 - 128, rest.smCount());
            assertFalse(ctx.isGreen());
            assertEquals(132, ctx.smCount());
            assertEquals(3, sim.gpu.liveGreenContexts());
        }
        assertEquals(0, sim.gpu.liveGreenContexts());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void everyStreamOfAGreenContextIsMadeForIt() {
        try (SmPartition p = device.partitionSms(64, 2)) {
            CudaContext g = p.group(1);
            assertTrue(sim.gpu.isGreenStream(g.computeStream().handle()));
            assertTrue(sim.gpu.isGreenStream(g.copyStream().handle()));
            try (Stream s = g.createStream(-1)) {
                assertTrue(sim.gpu.isGreenStream(s.handle()));
            }
            assertFalse(sim.gpu.isGreenStream(ctx.computeStream().handle()), "the primary context's are ordinary");
        }
    }

    @Test
    void aSplitTheSmsCannotMakeIsRefusedAndLeavesNothing() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> device.partitionSms(64, 3));
        assertTrue(e.getMessage().contains("only 2 groups"), e.getMessage());
        assertEquals(0, sim.gpu.liveGreenContexts());
        assertThrows(IllegalArgumentException.class, () -> device.partitionSms(0, 2));
        assertThrows(IllegalArgumentException.class, () -> device.partitionSms(8, 0));
    }

    @Test
    void aGroupClosesLikeAnyContextAfterItsWorkAndRefusesWhileOwnersAreOpen() {
        SmPartition p = device.partitionSms(64, 2, ContextOptions.defaults().withLeakTracking(true));
        CudaContext g = p.group(0);
        DeviceBuffer b = g.allocate(256);
        assertEquals(1, g.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertTrue(g.diagnostics().liveOwners().stream().anyMatch(o -> o.kind() == OwnerKind.DEVICE_BUFFER), "leak tracking names it");
        assertThrows(IllegalStateException.class, p::close);
        assertFalse(g.isClosed(), "refused: the group with an open buffer stays open");
        assertTrue(p.group(1).isClosed(), "the others closed");
        Stream s = g.createStream();
        HeldStreams.hold(sim, s);
        s.memset(b.bytes(), (byte) 7);
        b.close();
        s.close();
        HeldStreams.release(sim, s);
        p.close();
        assertTrue(g.isClosed());
        assertEquals(0, sim.gpu.liveGreenContexts());
        assertEquals(List.of(), sim.gpu.violations(), "nothing freed under queued work; no green context destroyed under a stream");
    }

    @Test
    void oneLibraryKernelRunsOnThePrimaryAndEveryGreenContext() {
        defineFill();
        try (SmPartition p = device.partitionSms(64, 2); KernelLibrary lib = ctx.loadLibrary(FILL)) {
            try (Kernel k0 = lib.kernel("fill"); Kernel k1 = lib.kernel("fill", p.group(0));
                    Kernel k2 = lib.kernel("fill", p.group(1))) {
                assertEquals(p.group(0), k1.context());
                assertArrayEquals(filled(5), runFill(k0, ctx, 5));
                assertArrayEquals(filled(6), runFill(k1, p.group(0), 6));
                assertArrayEquals(filled(7), runFill(k2, p.group(1), 7));
                assertEquals(1, p.group(0).diagnostics().liveOwners(OwnerKind.KERNEL));
            }
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.LIBRARY));
        }
        ctx.reap();
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.LIBRARY));
        assertEquals(0, sim.gpu.liveLibraries());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aLibraryIsUnloadedOnlyAfterItsLastKernelsLaunchesCompletedInAnyContext() {
        defineFill();
        try (SmPartition p = device.partitionSms(64, 2)) {
            CudaContext g = p.group(0);
            KernelLibrary lib = ctx.loadLibrary(FILL);
            Kernel k = lib.kernel("fill", g);
            try (DeviceBuffer b = g.allocate(64)) {
                HeldStreams.hold(sim, g.computeStream());
                k.launch(g.computeStream(), LaunchConfig.of(1, 16), KernelArg.pointer(b), KernelArg.i32(16), KernelArg.i32(1));
                lib.close();
                k.close();
                ctx.reap();
                g.reap();
                assertEquals(1, sim.gpu.liveLibraries(), "a queued launch still runs its code");
                assertThrows(IllegalStateException.class, () -> lib.kernel("fill"), "closed");
                HeldStreams.release(sim, g.computeStream());
                g.computeStream().synchronize();
                g.reap();
                ctx.reap();
            }
            assertEquals(0, sim.gpu.liveLibraries());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aMissingKernelIsRefusedAndHoldsNothing() {
        try (KernelLibrary lib = ctx.loadLibrary(FILL)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> lib.kernel("nope"));
            assertTrue(e.getMessage().contains("'nope'"), e.getMessage());
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveLibraries(), "the failed lookup left no hold behind");
    }

    @Test
    void aGraphCapturedOnAGreenStreamReplaysThere() {
        defineFill();
        try (SmPartition p = device.partitionSms(64, 2); KernelLibrary lib = ctx.loadLibrary(FILL)) {
            CudaContext g = p.group(1);
            try (Kernel k = lib.kernel("fill", g); Stream s = g.createStream(); DeviceBuffer b = g.allocate(64)) {
                b.asInts().copyFrom(new int[16]);
                Graph graph;
                try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                    k.launch(s, LaunchConfig.of(1, 16), KernelArg.pointer(b), KernelArg.i32(16), KernelArg.i32(9));
                    graph = capture.end();
                }
                int[] out = new int[16];
                b.asInts().copyTo(out);
                assertArrayEquals(new int[16], out, "recorded, not run");
                try (graph; GraphExec exec = graph.instantiate()) {
                    exec.launch(s);
                    b.asInts().copyTo(out);
                    assertArrayEquals(filled(9), out);
                }
                assertTrue(sim.gpu.isGreenStream(s.handle()));
            }
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveLibraries());
    }

    @Test
    void ownersOfOneGroupAreRefusedOnAnotherBeforeAnyDriverCall() {
        defineFill();
        try (SmPartition p = device.partitionSms(64, 2); KernelLibrary lib = ctx.loadLibrary(FILL);
                Kernel k = lib.kernel("fill", p.group(0)); DeviceBuffer b = p.group(0).allocate(64)) {
            int launches = sim.gpu.launches();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> k.launch(
                    p.group(1).computeStream(), LaunchConfig.of(1, 16), KernelArg.pointer(b), KernelArg.i32(16),
                    KernelArg.i32(1)));
            assertTrue(e.getMessage().contains("green context 0x"), e.getMessage());
            assertEquals(launches, sim.gpu.launches(), "refused before the driver");
        }
    }

    @Test
    void anOlderDriverIsToldWhatEachNeeds() {
        Simulated old = new Simulated(new FakeDriverApi().version(12030));
        CudaContext c = old.context();
        DriverTooOldException split = assertThrows(DriverTooOldException.class, () -> c.device().partitionSms(8, 2));
        assertTrue(split.getMessage().contains("cuDeviceGetDevResource"), split.getMessage());
        assertEquals(0, old.gpu.liveGreenContexts());
        Simulated older = new Simulated(new FakeDriverApi().withoutSymbol("cuLibraryLoadData"));
        DriverTooOldException load = assertThrows(DriverTooOldException.class,
                () -> older.context().loadLibrary(FILL));
        assertTrue(load.getMessage().contains("cuLibraryLoadData"), load.getMessage());
        assertEquals(0, older.context().diagnostics().liveOwners(OwnerKind.LIBRARY));
    }

    @Test
    void aWarmedLaunchOfALibraryKernelOnAGreenStreamIsOneCuLaunchKernel() {
        defineFill();
        try (SmPartition p = device.partitionSms(64, 2); KernelLibrary lib = ctx.loadLibrary(FILL);
                Kernel k = lib.kernel("fill", p.group(0)); DeviceBuffer b = p.group(0).allocate(64)) {
            Stream s = p.group(0).computeStream();
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 16), KernelArg.pointer(b), KernelArg.i32(16), KernelArg.i32(3));
            launch.launch(s);
            sim.faults.clear();
            sim.faults.countCalls();
            launch.launch(s);
            assertEquals(Map.of("cuLaunchKernel", 1), sim.faults.counts(), "what C makes: no context made current");
            sim.faults.clear();
        }
    }
}
