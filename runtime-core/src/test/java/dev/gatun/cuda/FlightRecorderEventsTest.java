package dev.gatun.cuda;

import static dev.gatun.cuda.testing.FlightRecording.named;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.FlightRecording;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;

/** What runtime-core records into Java Flight Recorder, on the simulated driver. */
class FlightRecorderEventsTest {

    private final Simulated sim = new Simulated();

    private static Graph captureOneLaunch(Stream s, Kernel k, DeviceBuffer b) {
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            k.launch(s, LaunchConfig.of(1, 32), KernelArg.pointer(b));
            return capture.end();
        }
    }

    @Test
    void moduleLoadsCapturesInstantiationsUpdatesAndSynchronousCopiesAreRecorded() {
        CudaContext ctx = sim.context();
        Stream s = ctx.createStream();
        List<RecordedEvent> events = FlightRecording.of(() -> {
            ctx.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
            try (Kernel k = ctx.modules().kernel("m", "k"); DeviceBuffer b = ctx.allocate(256)) {
                try (Graph first = captureOneLaunch(s, k, b); GraphExec exec = first.instantiate();
                        Graph second = captureOneLaunch(s, k, b)) {
                    assertTrue(exec.update(second));
                }
                try (StreamCapture aborted = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                    aborted.abort();
                }
                b.asInts().copyTo(new int[64]);
                b.asInts().copyFrom(new int[64]);
            }
        });
        RecordedEvent load = named(events, "dev.gatun.ModuleLoad").getFirst();
        assertEquals("m", load.getString("name"));
        assertEquals("k.ptx", load.getString("artifact"));
        assertEquals("PTX", load.getString("format"));
        assertTrue(load.getBoolean("loaded"));
        assertTrue(load.getLong("bytes") > 0);

        List<String> outcomes = named(events, "dev.gatun.GraphCapture").stream().map(e -> e.getString("outcome")).toList();
        assertEquals(List.of("ended", "ended", "aborted"), outcomes);
        assertEquals("THREAD_LOCAL", named(events, "dev.gatun.GraphCapture").getFirst().getString("mode"));
        assertEquals(1, named(events, "dev.gatun.GraphInstantiate").size());
        assertTrue(named(events, "dev.gatun.GraphInstantiate").getFirst().getBoolean("instantiated"));
        assertTrue(named(events, "dev.gatun.GraphUpdate").getFirst().getBoolean("updated"));

        List<RecordedEvent> copies = named(events, "dev.gatun.SynchronousCopy");
        assertEquals(List.of("device-to-host", "host-to-device"), copies.stream().map(e -> e.getString("direction")).toList());
        assertEquals(256, copies.getFirst().getLong("bytes"));
        assertTrue(copies.getFirst().getBoolean("staged"), "an int[] goes through pinned staging");
        s.close();
        ctx.close();
    }

    @Test
    void synchronousCopiesAndPoolMissesAreRecordedOnlyPastAThresholdAndWithoutStackTracesByDefault() {
        for (Class<? extends jdk.jfr.Event> type : List.of(dev.gatun.cuda.internal.events.SynchronousCopyEvent.class,
                dev.gatun.cuda.internal.events.PoolMissEvent.class)) {
            java.util.Map<String, String> defaults = jdk.jfr.EventType.getEventType(type).getSettingDescriptors().stream()
                    .collect(java.util.stream.Collectors.toMap(jdk.jfr.SettingDescriptor::getName,
                            jdk.jfr.SettingDescriptor::getDefaultValue));
            assertEquals("false", defaults.get("stackTrace"), type.getSimpleName() + " " + defaults);
            assertTrue(defaults.get("threshold").matches("[1-9][0-9]* (ms|us)"), type.getSimpleName() + " " + defaults);
        }
    }

    @Test
    void aPoolMissIsRecordedAndAHitIsNot() {
        CudaContext ctx = sim.pooledContext();
        List<RecordedEvent> events = FlightRecording.of(() -> {
            ctx.allocate(1000).close(); // a miss: the pool is empty
            ctx.allocate(1000).close(); // a hit
        });
        List<RecordedEvent> misses = named(events, "dev.gatun.PoolMiss");
        assertEquals(1, misses.size());
        assertEquals(1000, misses.getFirst().getLong("requested"));
        assertTrue(misses.getFirst().getLong("allocated") >= 1000);
        assertTrue(misses.getFirst().getBoolean("pooledSize"));
        ctx.close();
    }

    @Test
    void anOutOfMemoryClimbAndEachRungItRanAreRecorded() {
        CudaContext ctx = sim.context();
        Stream busy = ctx.createStream();
        List<RecordedEvent> events = FlightRecording.of(() -> {
            sim.gpu.memoryLimit(3 << 20);
            DeviceBuffer b = busy.allocate(2 << 20);
            HeldStreams.hold(sim, busy);
            busy.memset(b.bytes(), (byte) 1);
            b.close(); // its free waits behind the memset: only a synchronize makes room
            ctx.computeStream().allocate(2 << 20).close();
            assertThrows(OutOfDeviceMemoryException.class, () -> ctx.computeStream().allocate(4 << 20));
        });
        List<RecordedEvent> climbs = named(events, "dev.gatun.OutOfMemory");
        assertEquals(List.of("rescued after synchronize", "failed"), climbs.stream().map(e -> e.getString("outcome"))
                .toList());
        assertEquals("stream-ordered allocation", climbs.getFirst().getString("allocation"));
        assertEquals(2 << 20, climbs.getFirst().getLong("requested"));
        assertTrue(climbs.getFirst().getStackTrace() != null, "who allocated");
        List<RecordedEvent> rungs = named(events, "dev.gatun.OutOfMemoryRung");
        assertEquals(List.of("retirement", "trim", "synchronize", "retirement", "trim", "synchronize"),
                rungs.stream().map(e -> e.getString("rung")).toList());
        assertEquals(List.of(false, false, true, false, false, true),
                rungs.stream().map(e -> e.getBoolean("retried")).toList(), "a retry after a rung that freed something, and after the last");
        assertEquals(List.of(false, false, true, false, false, false),
                rungs.stream().map(e -> e.getBoolean("rescued")).toList());
        busy.close();
        ctx.close();
    }

    @Test
    void capRefusalsAndSoftLimitTrimsAreRecorded() {
        CudaContext ctx = sim.cuda.device(0).context(ContextOptions.defaults().withDevicePool(
                new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false).withHardCapBytes(4 << 20).withSoftLimitBytes(1 << 20)));
        List<RecordedEvent> events = FlightRecording.of(() -> {
            DeviceBuffer live = ctx.allocate(2 << 20);
            assertThrows(OutOfDeviceMemoryException.class, () -> ctx.allocate(3 << 20)); // 2 + 3 MiB > 4
            live.close(); // retained: 2 MiB held, above the soft limit
            ctx.reap();
            ctx.reap(); // idle since the previous safe point: the retained 2 MiB go
        });
        List<RecordedEvent> caps = named(events, "dev.gatun.MemoryCap");
        assertEquals(List.of("hard cap refusal", "soft limit trim"),
                caps.stream().map(e -> e.getString("action")).distinct().toList());
        RecordedEvent trim = caps.getLast();
        assertEquals("the device pool", trim.getString("pool"));
        assertEquals(2 << 20, trim.getLong("bytes"));
        ctx.close();
    }

    @Test
    void theRetirementBacklogIsRecordedAtSixtyFourPendingHandles() {
        CudaContext ctx = sim.context();
        Stream s = ctx.createStream();
        List<RecordedEvent> events = FlightRecording.of(() -> {
            sim.gpu.hold(s.handle()); // nothing queued on s completes: every close waits for its fence
            List<DeviceBuffer> buffers = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                DeviceBuffer b = ctx.allocate(256);
                s.memset(b.bytes(), (byte) 1);
                buffers.add(b);
            }
            buffers.forEach(DeviceBuffer::close);
        });
        List<RecordedEvent> backlog = named(events, "dev.gatun.RetirementBacklog");
        assertEquals(1, backlog.size(), "reported at 64, next at 128");
        assertEquals(64, backlog.getFirst().getLong("pending"));
        sim.gpu.release(s.handle());
        ctx.synchronize();
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        s.close();
        ctx.close();
    }

    @Test
    void poisoningIsRecordedOnceWithTheOperationAndResult() {
        CudaContext ctx = sim.context();
        Stream s = ctx.createStream();
        CudaException[] sticky = new CudaException[1];
        List<RecordedEvent> events = FlightRecording.of(() -> {
            sim.faults.replaceAlways(FaultPlan.ANY, CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS());
            LogCapture.clear();
            sticky[0] = assertThrows(CudaException.class, s::synchronize);
            assertThrows(ContextPoisonedException.class, s::synchronize);
        });
        LogCapture.expectPoisonedBy(sticky[0]);
        List<RecordedEvent> poisoned = named(events, "dev.gatun.ContextPoisoned");
        assertEquals(1, poisoned.size());
        assertEquals("cuStreamSynchronize", poisoned.getFirst().getString("operation"));
        assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", poisoned.getFirst().getString("result"));
    }
}
