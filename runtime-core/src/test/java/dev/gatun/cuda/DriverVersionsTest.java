package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.internal.driver.DriverApi;
import dev.gatun.cuda.internal.driver.DriverFeature;
import dev.gatun.cuda.internal.driver.EntryPoints;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Gatun on drivers for CUDA 12.0, 12.4, 12.8 and 13.0: the simulated driver reports the version
 * and has only the functions no newer than it (its {@code cuGetProcAddress_v2} does not know the
 * others, and a call of one fails as a missing downcall's first call does). The core works on
 * every one of them; each feature newer than 12.0 works where the driver is new enough, and
 * elsewhere fails typed (naming itself and both versions, before any call of its own) or takes
 * its other way. {@link #everyFeatureNewerThanTheBaselineHasAScenario} keeps the list whole.
 */
class DriverVersionsTest {

    private static final int N = AddKernelFixture.N;
    private static final ModuleImage FILL = ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32", "u32"));

    @ParameterizedTest(name = "CUDA {0}")
    @ValueSource(ints = {12000, 12040, 12080, 13000})
    void theCoreWorksOnEveryDriverFrom12Point0(int version) {
        try (AddKernelFixture f = new AddKernelFixture(new FakeDriverApi().version(version))) {
            CudaContext ctx = f.ctx;
            Stream s = f.stream;
            f.sim.gpu.kernelBody("fill", FakeKernel.ADD);
            try (DeviceBuffer v = ctx.allocate(4 * N); PinnedBuffer pinned = ctx.allocatePinned(4 * N);
                    Event start = ctx.createTimingEvent(); Event end = ctx.createTimingEvent();
                    MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                    DeviceBuffer fromPool = pool.allocate(s, 4 * N); DeviceBuffer ordered = s.allocate(4 * N);
                    KernelLibrary library = ctx.loadLibrary(FILL); Kernel fill = library.kernel("fill")) {
                // memory and copies, through pinned memory too
                v.asInts().copyFrom(AddKernelFixture.filled(1));
                pinned.segment().asSlice(0, 4 * N).fill((byte) 0);
                s.upload(ordered.asInts(), pinned, 0);
                s.copy(fromPool.asInts(), v.asInts());
                // a launch between two timing events
                start.record(s);
                f.launch(v, 2).launch(s);
                end.record(s);
                s.synchronize();
                assertTrue(end.elapsedMillis(start) >= 0);
                assertArrayEquals(AddKernelFixture.filled(3), AddKernelFixture.read(v));
                assertArrayEquals(AddKernelFixture.filled(1), AddKernelFixture.read(fromPool));
                // a kernel of a library
                fill.prepare(LaunchConfig.of(1, N), KernelArg.pointer(ordered), KernelArg.i32(N), KernelArg.i32(4))
                        .launch(s);
                assertArrayEquals(AddKernelFixture.filled(4), AddKernelFixture.read(ordered));
                // a captured graph, replayed twice
                Graph captured;
                try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                    f.launch(v, 10).launch(s);
                    captured = capture.end();
                }
                try (Graph g = captured; GraphExec exec = g.instantiate()) {
                    exec.launch(s);
                    exec.launch(s);
                    s.synchronize();
                }
                assertArrayEquals(AddKernelFixture.filled(23), AddKernelFixture.read(v));
                // a graph built node by node
                try (Graph g = ctx.createGraph()) {
                    GraphNode zero = g.addFill(v.asInts(), 5);
                    g.addKernel(f.launch(v, 1), zero);
                    try (GraphExec exec = g.instantiate()) {
                        exec.launch(s);
                        s.synchronize();
                    }
                }
                assertArrayEquals(AddKernelFixture.filled(6), AddKernelFixture.read(v));
                ordered.close(); // stream-ordered: freed on its stream
                fromPool.close();
            }
            assertEquals(List.of(), f.sim.gpu.violations());
        }
    }

    /** One feature newer than 12.0, tried on one simulated driver. */
    private record Tried(AddKernelFixture f, int version) {
        boolean newEnoughFor(DriverFeature feature) {
            return version >= feature.minimum();
        }
    }

    /**
     * Per feature newer than 12.0: what uses it, and what must follow on each driver. A feature
     * that fails on an older driver is {@link #refused}; one that takes another way checks which
     * way it took itself.
     */
    private static final Map<DriverFeature, Consumer<Tried>> SCENARIOS = new EnumMap<>(DriverFeature.class);

    private static void refused(DriverFeature feature, Consumer<AddKernelFixture> use) {
        refused(feature, feature, use);
    }

    /**
     * A feature that builds on {@code first}: on a driver too old for that one, it is that one
     * that refuses.
     */
    private static void refused(DriverFeature feature, DriverFeature first, Consumer<AddKernelFixture> use) {
        SCENARIOS.put(feature, t -> {
            if (t.newEnoughFor(feature)) {
                use.accept(t.f());
                return;
            }
            DriverFeature refusing = t.newEnoughFor(first) ? feature : first;
            t.f().sim.faults.countCalls();
            DriverTooOldException e = assertThrows(DriverTooOldException.class, () -> use.accept(t.f()),
                    feature + " on " + t.version());
            assertEquals(refusing.title(), e.feature());
            assertEquals(refusing.minimum(), e.requiredVersion(), e.getMessage());
            assertEquals(t.version(), e.installedVersion());
            assertTrue(e.getMessage().contains("needs a CUDA driver for CUDA " + CudaVersion.of(refusing.minimum())),
                    e.getMessage());
            feature.entryPoints().forEach(fn -> assertEquals(0, t.f().sim.faults.calls(fn.name()),
                    fn + " was called: the feature is refused before its first call"));
        });
    }

    private static void fallsBack(DriverFeature feature, BiConsumer<AddKernelFixture, Boolean> useAndCheckTheWay) {
        SCENARIOS.put(feature, t -> useAndCheckTheWay.accept(t.f(), t.newEnoughFor(feature)));
    }

    static {
        fallsBack(DriverFeature.ELAPSED_TIME_V2, (f, second) -> {
            try (Event a = f.ctx.createTimingEvent(); Event b = f.ctx.createTimingEvent()) {
                a.record(f.stream);
                b.record(f.stream);
                f.sim.faults.countCalls();
                assertTrue(b.elapsedMillis(a) >= 0);
                assertEquals(second ? 1 : 0, f.sim.faults.calls("cuEventElapsedTime_v2"));
                assertEquals(second ? 0 : 1, f.sim.faults.calls("cuEventElapsedTime"));
            }
        });
        fallsBack(DriverFeature.BATCHED_COPIES, (f, batched) -> {
            try (CopyBatch batch = CopyBatch.create(2); DeviceBuffer a = f.ctx.allocate(64);
                    DeviceBuffer b = f.ctx.allocate(64); DeviceBuffer c = f.ctx.allocate(64)) {
                a.bytes().copyFrom(new byte[64]);
                batch.copy(b.bytes(), a.bytes()).copy(c.bytes(), a.bytes()).submit(f.stream);
                f.stream.synchronize();
                assertEquals(batched ? 1 : 0, f.sim.gpu.batchCopyCalls());
                assertEquals(batched ? 0 : 2, f.sim.gpu.singleCopyCalls());
            }
        });
        fallsBack(DriverFeature.POOL_HARD_CAP, (f, byTheDriver) -> {
            try (MemoryPool pool = f.ctx.createMemoryPool(MemoryPoolOptions.defaults().withHardCapBytes(4 << 20));
                    DeviceBuffer a = pool.allocate(f.stream, 3 << 20)) {
                f.sim.faults.countCalls();
                assertThrows(OutOfDeviceMemoryException.class, () -> pool.allocate(f.stream, 2 << 20));
                assertEquals(byTheDriver, f.sim.faults.calls("cuMemAllocFromPoolAsync") > 0,
                        "the driver refuses past its maxSize; without it, Gatun refuses before the driver");
            }
        });
        fallsBack(DriverFeature.PARAMETER_INFO, (f, known) -> assertEquals(known, f.add.parameters().isPresent()));
        fallsBack(DriverFeature.DRIVER_LOG, (f, registered) -> assertEquals(registered ? 1 : 0,
                f.sim.gpu.logCallbacks()));
        refused(DriverFeature.LAUNCH_COMPLETION_EVENT, f -> {
            try (DeviceBuffer v = f.ctx.allocate(4 * N); Event done = f.ctx.createEvent()) {
                f.add.prepare(LaunchConfig.of(1, N).withLaunchCompletionEvent(done), KernelArg.pointer(v),
                        KernelArg.i32(N), KernelArg.i32(1)).launch(f.stream);
                f.stream.synchronize();
            }
        });
        refused(DriverFeature.PROGRAMMATIC_EDGES, f -> {
            try (DeviceBuffer v = f.ctx.allocate(4 * N); Graph g = f.ctx.createGraph()) {
                g.addProgrammaticDependency(g.addKernel(f.launch(v, 1)), g.addKernel(f.launch(v, 2)));
            }
        });
        refused(DriverFeature.CONDITIONAL_NODES, f -> {
            try (Graph g = f.ctx.createGraph()) {
                g.addIf(g.createConditionalHandle(1));
            }
        });
        refused(DriverFeature.ELSE_AND_SWITCH, DriverFeature.CONDITIONAL_NODES, f -> {
            try (Graph g = f.ctx.createGraph()) {
                g.addIfElse(g.createConditionalHandle(1));
            }
        });
        refused(DriverFeature.CAPTURED_CONDITIONALS, f -> {
            try (StreamCapture capture = f.stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
                capture.addIf(capture.createConditionalHandle(1));
                capture.end().close();
            }
        });
        refused(DriverFeature.GREEN_CONTEXTS, f -> {
            try (SmPartition p = f.ctx.device().partitionSms(8, 2); DeviceBuffer v = p.group(0).allocate(4 * N)) {
                p.group(0).computeStream().fill(v.asInts(), 1);
                p.group(0).computeStream().synchronize();
            }
        });
        refused(DriverFeature.GPU_COREDUMPS, f -> f.sim.cuda.device(1).context(ContextOptions.defaults()
                .withCoredumps(GpuCoredumps.into(Path.of(System.getProperty("java.io.tmpdir"))))).close());
    }

    @ParameterizedTest(name = "CUDA {0}")
    @ValueSource(ints = {12000, 12040, 12080, 13000})
    void everyNewerFeatureWorksOrFailsTypedOrTakesItsOtherWay(int version) {
        for (Map.Entry<DriverFeature, Consumer<Tried>> e : SCENARIOS.entrySet()) {
            try (AddKernelFixture f = new AddKernelFixture(new FakeDriverApi().version(version).deviceCount(2))) {
                e.getValue().accept(new Tried(f, version));
            } catch (AssertionError | RuntimeException failure) {
                throw new AssertionError(e.getKey() + " on CUDA " + CudaVersion.of(version) + ": " + failure, failure);
            }
        }
    }

    @Test
    void everyFeatureNewerThanTheBaselineHasAScenario() {
        List<DriverFeature> newer = Arrays.stream(DriverFeature.values())
                .filter(f -> f.minimum() > Driver.MINIMUM_VERSION).toList();
        assertEquals(newer, List.copyOf(SCENARIOS.keySet()),
                "a feature newer than 12.0 without a scenario here (or one whose minimum is now 12.0)");
        for (DriverFeature feature : newer) {
            assertTrue(feature.minimum() <= 13000, feature + " is newer than the newest driver tried here");
        }
    }

    @Test
    void theSimulatedDriverHidesWhatIsNewerThanItAndAnswersAsTheDriverDocuments() {
        DriverApi gpu = new FakeDriverApi().version(12040).api();
        long legacy = EntryPoints.LEGACY_STREAM;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pfn = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, gpu.cuGetProcAddress_v2(arena.allocateFrom("cuGreenCtxCreate"), pfn, 12040, legacy, status));
            assertEquals(CudaDriver.CU_GET_PROC_ADDRESS_SUCCESS(), status.get(ValueLayout.JAVA_INT, 0), "12.4's");
            assertTrue(pfn.get(ValueLayout.ADDRESS, 0).address() != 0);

            assertEquals(CudaDriver.CUDA_ERROR_NOT_FOUND(), gpu.cuGetProcAddress_v2(
                    arena.allocateFrom("cuGreenCtxStreamCreate"), pfn, 12040, legacy, status), "12.5's");
            assertEquals(CudaDriver.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND(), status.get(ValueLayout.JAVA_INT, 0));
            assertEquals(MemorySegment.NULL, pfn.get(ValueLayout.ADDRESS, 0));

            assertEquals(0, gpu.cuGetProcAddress_v2(arena.allocateFrom("cuGreenCtxCreate"), pfn, 12000, legacy, status));
            assertEquals(CudaDriver.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT(), status.get(ValueLayout.JAVA_INT, 0),
                    "asked for a 12.0 variant, which there is not");
            assertEquals(MemorySegment.NULL, pfn.get(ValueLayout.ADDRESS, 0));

            assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), gpu.cuGetProcAddress_v2(arena.allocateFrom("cuMemAlloc"),
                    pfn, 12080, legacy, status), "a version newer than the driver");
        }
    }
}
