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
        assertEquals(0, ctx.counters().retirementsPending());
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
