package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Random sequences of allocation, use on several streams, GPU stalls, injected fence
 * failures, closes and reaps, checked against a model of which buffers are open: the
 * simulated driver must never see memory freed under queued work, and once the GPU is idle
 * and the queue reaped, exactly the closed buffers are gone.
 */
class RetirementPropertiesTest {

    enum Kind { ALLOC, ALLOC_ASYNC, MEMSET, COPY, PINNED_ROUND_TRIP, HOLD, RELEASE, CLOSE, REAP, FAIL_NEXT_FENCES }

    record Step(Kind kind, int a, int b, int stream) {
    }

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Step> step = Combinators.combine(Arbitraries.of(Kind.class), Arbitraries.integers().between(0, 7),
                Arbitraries.integers().between(0, 7), Arbitraries.integers().between(0, 2)).as(Step::new);
        return step.list().ofMinSize(1).ofMaxSize(60);
    }

    @Property(tries = 150)
    void closedMemoryIsFreedOnlyAfterItsWorkAndAlwaysEventually(@ForAll("steps") List<Step> steps) {
        Simulated sim = new Simulated();
        CudaContext ctx = sim.context();
        Stream[] streams = {ctx.createStream(), ctx.createStream(), ctx.computeStream()};
        List<DeviceBuffer> open = new ArrayList<>();
        PinnedBuffer pinned = ctx.allocatePinned(64);
        for (Step s : steps) {
            Stream stream = streams[s.stream()];
            switch (s.kind()) {
                case ALLOC -> open.add(ctx.allocate(64));
                case ALLOC_ASYNC -> open.add(stream.allocate(64));
                case MEMSET -> {
                    if (!open.isEmpty()) {
                        stream.memset(open.get(s.a() % open.size()).bytes(), (byte) s.b());
                    }
                }
                case COPY -> {
                    if (!open.isEmpty()) {
                        stream.copy(open.get(s.a() % open.size()).bytes(), open.get(s.b() % open.size()).bytes());
                    }
                }
                case PINNED_ROUND_TRIP -> {
                    if (!open.isEmpty()) {
                        DeviceView v = open.get(s.a() % open.size()).bytes();
                        try {
                            stream.upload(v, pinned, 0);
                            stream.download(pinned, 0, v);
                        } catch (CudaException injected) {
                            // an injected fence failure: the buffer stays fenced or unfenced, never freed early
                        }
                    }
                }
                case HOLD -> sim.gpu.hold(stream.handle());
                case RELEASE -> sim.gpu.release(stream.handle());
                case CLOSE -> {
                    if (!open.isEmpty()) {
                        open.remove(s.a() % open.size()).close();
                    }
                }
                case REAP -> ctx.reap();
                case FAIL_NEXT_FENCES -> sim.faults.inject("cuEventRecord", 999,
                        dev.gatun.cuda.testing.FaultPlan.Mode.REPLACE, 0, 1 + s.b() % 3);
            }
            assertEquals(List.of(), sim.gpu.violations(), "after " + s);
            assertEquals(open.size(), ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        }
        sim.faults.clear();
        pinned.close();
        for (Stream stream : streams) {
            sim.gpu.release(stream.handle());
        }
        ctx.reap();
        ctx.reap(); // a fence that could not be recorded earlier is recorded at the first reap, seen at the second
        assertEquals(open.size(), sim.gpu.liveDeviceAllocations());
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(List.of(), sim.gpu.violations());
    }
}
