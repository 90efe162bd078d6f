package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeDriverApi.LaunchAttribute;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The two event attributes of a launch, on the simulated driver: a programmatic event
 * ({@code CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT}) and a launch completion event
 * ({@code CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT}) reach cuLaunchKernelEx with their event
 * and flags; the kernel records the event (the simulated driver: once the kernel ran), so a wait
 * on another stream orders after it; a warmed launch is still one driver call; the event stays
 * alive while a launch that records it is queued; and every misuse (a timing event, another
 * context's event, a closed event, a device or driver too old) is refused before any driver call.
 */
class LaunchEventsTest {

    private static final int PROGRAMMATIC = CudaDriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT();
    private static final int COMPLETION = CudaDriver.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT();
    private static final int PDL = CudaDriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION();

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = withStoreKernel(sim, sim.context());

    /** {@code context} with module "m" loaded: kernel "store" writes its int argument to its pointer. */
    private static CudaContext withStoreKernel(Simulated on, CudaContext context) {
        on.gpu.kernelBody("store", l -> l.memory(l.pointer(0), 4).set(ValueLayout.JAVA_INT, 0, l.i32(1)));
        context.modules().load("m", ModuleImage.ptx("store.ptx", Ptx.module("store", "u64", "u32")));
        return context;
    }

    @AfterEach
    void nothingLeftOrMisused() {
        ctx.close(); // refuses while an event, kernel or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveEvents(), "every event destroyed");
    }

    private static int read(DeviceBuffer b) {
        int[] out = new int[1];
        b.asInts().copyTo(out);
        return out[0];
    }

    private List<LaunchAttribute> lastAttributes() {
        List<List<LaunchAttribute>> all = sim.gpu.extendedLaunches();
        return all.get(all.size() - 1);
    }

    @Test
    void aProgrammaticEventIsOneAttributeWithItsHandleFlagsAndTrigger() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4); Event e = ctx.createEvent()) {
            LaunchConfig grid = LaunchConfig.of(2, 32);
            k.launch(ctx.computeStream(), grid.withProgrammaticEvent(e, false), KernelArg.pointer(out), KernelArg.i32(5));
            assertEquals(List.of(new LaunchAttribute(PROGRAMMATIC, List.of(0, 0), e.handle().address())), lastAttributes());
            k.launch(ctx.computeStream(), grid.withProgrammaticEvent(e, true), KernelArg.pointer(out), KernelArg.i32(6));
            assertEquals(List.of(new LaunchAttribute(PROGRAMMATIC, List.of(0, 1), e.handle().address())), lastAttributes());
            assertEquals(6, read(out), "the kernel ran");
        }
    }

    @Test
    void everyAttributeWithBothEventsFillsAnArrayOfExactlyThatSize() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4);
                Event programmatic = ctx.createEvent(); Event started = ctx.createEvent()) {
            LaunchConfig config = LaunchConfig.of(2, 32).withProgrammaticStreamSerialization(true).withPriority(-1)
                    .withLaunchCompletionEvent(started).withProgrammaticEvent(programmatic, true);
            k.launch(ctx.computeStream(), config, KernelArg.pointer(out), KernelArg.i32(7));
            assertEquals(List.of(new LaunchAttribute(PDL, List.of(1)),
                    new LaunchAttribute(CudaDriver.CU_LAUNCH_ATTRIBUTE_PRIORITY(), List.of(-1)),
                    new LaunchAttribute(PROGRAMMATIC, List.of(0, 1), programmatic.handle().address()),
                    new LaunchAttribute(COMPLETION, List.of(0), started.handle().address())), lastAttributes());
            assertEquals(7, read(out));
        }
    }

    @Test
    void theKernelRecordsItsEventsAndAWaitOnAnotherStreamOrdersAfterThem() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer x = ctx.allocate(4); DeviceBuffer y = ctx.allocate(4);
                Event triggered = ctx.createEvent(); Event started = ctx.createEvent(); Stream producer = ctx.createStream();
                Stream consumer = ctx.createStream()) {
            x.asInts().copyFrom(new int[] {-1});
            y.asInts().copyFrom(new int[] {-2});
            sim.gpu.hold(producer.handle()); // the producer's kernel waits until released
            k.launch(producer, LaunchConfig.of(1, 32).withProgrammaticEvent(triggered, false).withLaunchCompletionEvent(started),
                    KernelArg.pointer(x), KernelArg.i32(42));
            assertFalse(triggered.query(), "recorded by the kernel, which has not run");
            assertFalse(started.query());
            consumer.waitFor(triggered);
            consumer.copy(y.asInts(), x.asInts()); // must see the producer's 42, not the -1 before it
            assertEquals(2, sim.gpu.queuedOperations(consumer.handle()), "the copy waits behind the event's wait");
            sim.gpu.release(producer.handle());
            assertTrue(triggered.query());
            assertTrue(started.query());
            assertEquals(42, read(y));
        }
    }

    @Test
    void aWarmedLaunchWithEventsIsStillOneCuLaunchKernelEx() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4); Event e = ctx.createEvent();
                Event f = ctx.createEvent()) {
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32).withProgrammaticEvent(e, false).withLaunchCompletionEvent(f),
                    KernelArg.pointer(out), KernelArg.i32(3));
            launch.launch(ctx.computeStream());
            sim.faults.countCalls();
            launch.launch(ctx.computeStream());
            assertEquals(Map.of("cuLaunchKernelEx", 1), sim.faults.counts());
            sim.faults.clear();
        }
    }

    @Test
    void anEventClosedWhileItsLaunchIsQueuedIsDestroyedOnlyAfterTheLaunchAndRefusedByLaterLaunches() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4); Stream s = ctx.createStream()) {
            Event e = ctx.createEvent();
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32).withProgrammaticEvent(e, false), KernelArg.pointer(out),
                    KernelArg.i32(9));
            sim.gpu.hold(s.handle());
            launch.launch(s);
            e.close();
            ctx.reap();
            assertTrue(sim.gpu.eventAlive(e.handle()), "the queued kernel still records it");
            sim.faults.countCalls();
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> launch.launch(s));
            assertTrue(refused.getMessage().contains("programmatic event") && refused.getMessage().contains("is closed")
                    && refused.getMessage().contains("prepare the launch again"), refused.getMessage());
            assertEquals(0, sim.faults.totalCalls(), () -> "driver calls for a refused launch: " + sim.faults.counts());
            sim.faults.clear();
            sim.gpu.release(s.handle());
            assertEquals(9, read(out));
            s.synchronize();
            ctx.reap();
            assertFalse(sim.gpu.eventAlive(e.handle()), "destroyed once the launch that records it completed");
        }
    }

    @Test
    void aCapturedLaunchWithAnEventKeepsTheEventForTheGraph() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4); Stream s = ctx.createStream()) {
            Event e = ctx.createEvent();
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32).withLaunchCompletionEvent(e), KernelArg.pointer(out),
                    KernelArg.i32(4));
            Graph g;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                launch.launch(s);
                g = capture.end();
            }
            e.close();
            ctx.reap();
            assertTrue(sim.gpu.eventAlive(e.handle()), "the captured graph holds the event");
            g.close();
            s.synchronize();
            ctx.reap();
            assertFalse(sim.gpu.eventAlive(e.handle()), "destroyed with the graph that held it");
        }
    }

    @Test
    void theConfigurationKeepsItsEventsThroughTheOtherWithMethods() {
        try (Event e = ctx.createEvent(); Event f = ctx.createEvent()) {
            LaunchConfig plain = LaunchConfig.of(4, 32);
            LaunchConfig both = plain.withProgrammaticEvent(e, true).withLaunchCompletionEvent(f);
            assertTrue(plain.withProgrammaticEvent(e, false).hasExtendedAttributes());
            assertTrue(plain.withLaunchCompletionEvent(f).hasExtendedAttributes());
            LaunchConfig changed = both.withPriority(-1).withSharedMemoryBytes(64).withCluster(1, 1, 1)
                    .withProgrammaticStreamSerialization(true).withCooperative(false).withoutPriority();
            assertEquals(Optional.of(e), changed.programmaticEvent());
            assertTrue(changed.isTriggerAtBlockStart());
            assertEquals(Optional.of(f), changed.launchCompletionEvent());
            assertEquals(plain, both.withoutProgrammaticEvent().withoutLaunchCompletionEvent());
            assertFalse(both.withoutProgrammaticEvent().isTriggerAtBlockStart(), "the trigger goes with its event");
            assertThrows(NullPointerException.class, () -> plain.withProgrammaticEvent(null, false));
            assertThrows(NullPointerException.class, () -> plain.withLaunchCompletionEvent(null));
        }
    }

    /** Prepares once (so the kernel's limits are read), then expects {@code config} refused with no driver call at all. */
    private static <T extends Throwable> T refusedWithoutDriverCalls(Simulated on, CudaContext context, Class<T> type,
            LaunchConfig config, String... phrases) {
        try (Kernel k = context.modules().kernel("m", "store"); DeviceBuffer out = context.allocate(4)) {
            k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(out), KernelArg.i32(0));
            int launches = on.gpu.launches();
            on.faults.clear();
            on.faults.countCalls();
            Executable prepare = () -> k.prepare(config, KernelArg.pointer(out), KernelArg.i32(1));
            T e = assertThrows(type, prepare);
            for (String phrase : phrases) {
                assertTrue(e.getMessage().contains(phrase), () -> "'" + phrase + "' missing from: " + e.getMessage());
            }
            assertEquals(0, on.faults.totalCalls(), () -> "driver calls for a refused launch: " + on.faults.counts());
            on.faults.clear();
            assertEquals(launches, on.gpu.launches());
            return e;
        }
    }

    @Test
    void aTimingEventIsRefused() {
        try (Event timing = ctx.createTimingEvent()) {
            refusedWithoutDriverCalls(sim, ctx, IllegalArgumentException.class,
                    LaunchConfig.of(1, 32).withProgrammaticEvent(timing, false), "programmatic event", "records timing",
                    "createEvent()");
            refusedWithoutDriverCalls(sim, ctx, IllegalArgumentException.class,
                    LaunchConfig.of(1, 32).withLaunchCompletionEvent(timing), "launch completion event", "records timing");
        }
    }

    @Test
    void anEventOfAnotherContextOrClosedIsRefused() {
        CudaContext other = sim.cuda.device(1).context();
        try (Event foreign = other.createEvent()) {
            refusedWithoutDriverCalls(sim, ctx, IllegalArgumentException.class,
                    LaunchConfig.of(1, 32).withProgrammaticEvent(foreign, false), "programmatic event", "device 1",
                    "used with device 0");
        } finally {
            other.close();
        }
        Event closed = ctx.createEvent();
        closed.close();
        refusedWithoutDriverCalls(sim, ctx, IllegalStateException.class,
                LaunchConfig.of(1, 32).withLaunchCompletionEvent(closed), "is closed");
    }

    @Test
    void aProgrammaticEventNeedsComputeCapabilityNineAndACompletionEventDoesNot() {
        Simulated ampere = new Simulated(new FakeDriverApi()
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR(), 8));
        CudaContext context = withStoreKernel(ampere, ampere.context());
        try (Event e = context.createEvent(); Kernel k = context.modules().kernel("m", "store");
                DeviceBuffer out = context.allocate(4)) {
            refusedWithoutDriverCalls(ampere, context, IllegalArgumentException.class,
                    LaunchConfig.of(1, 32).withProgrammaticEvent(e, false), "programmatic event", "9.0", "8.",
                    "withLaunchCompletionEvent");
            k.launch(context.computeStream(), LaunchConfig.of(1, 32).withLaunchCompletionEvent(e), KernelArg.pointer(out),
                    KernelArg.i32(8));
            assertEquals(8, read(out));
            assertTrue(e.query());
        }
        context.close();
    }

    @Test
    void aCompletionEventNeedsADriverForCuda12Point3() {
        Simulated old = new Simulated(new FakeDriverApi().version(12020));
        CudaContext context = withStoreKernel(old, old.context());
        try (Event e = context.createEvent()) {
            DriverTooOldException tooOld = refusedWithoutDriverCalls(old, context, DriverTooOldException.class,
                    LaunchConfig.of(1, 32).withLaunchCompletionEvent(e), "CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT",
                    "12.3");
            assertEquals(12030, tooOld.requiredVersion());
        }
        context.close();
    }

    @Test
    void aGraphKernelNodeCannotCarryAnEvent() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4); Graph g = ctx.createGraph();
                Event e = ctx.createEvent()) {
            KernelLaunch launch = k.prepare(LaunchConfig.of(1, 32).withLaunchCompletionEvent(e), KernelArg.pointer(out),
                    KernelArg.i32(1));
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> g.addKernel(launch));
            assertTrue(refused.getMessage().contains("Graph.addEventRecord"), refused.getMessage());
        }
    }
}
