package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.Carriers;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import dev.gatun.cuda.testing.TwoCarriers;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A virtual thread that parks between making its context current and the driver call that needs
 * it resumes on another carrier, where another context may be current. These tests force exactly
 * that: a virtual thread mounted on carrier A parks as it enters the capture gate (held at the
 * section's count, where the gate's slow path would park it on its lock while a global capture
 * counts itself in), inside a free that acts on the current context, and resumes on carrier B, where a green context of the
 * same device is current (a virtual thread that worked on it left it there). The scheduler is the
 * test's own ({@link Carriers#virtualThreadsOn}), so which carrier runs each mount is chosen, not
 * sampled. The simulated driver keeps the current context per carrier and refuses a free made
 * under the wrong one.
 *
 * <p>On 9e28154 the retirement of a closed buffer and a pool trim made the context current on A
 * once, then took the gate's lock, then freed: the free ran on B under the green context, and the
 * driver refused it ({@code CUDA_ERROR_INVALID_CONTEXT}). Now each free makes its context current
 * itself, on B, immediately before its call.
 */
class VirtualThreadContextTest {

    /** One driver call of the virtual thread V: where it ran, what was current there as it began, what it returned. */
    private record Call(String function, String carrier, long context, Object result) {
    }

    private final FakeDriverApi gpu = new FakeDriverApi();
    private final Interposer interposer = Interposer.over(gpu);
    private final Simulated sim = new Simulated(interposer);
    private final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    private final TwoCarriers carriers = new TwoCarriers();

    @AfterEach
    void stopCarriers() throws InterruptedException {
        Interposer.releaseSwitchPoints();
        carriers.close();
    }

    /** Carrier B runs work on {@code green}, which leaves that context current there. */
    private void greenCurrentOnB(CudaContext green) throws Exception {
        Thread b = carriers.runOnB(() -> green.allocate(64).close());
        assertEquals(green.handle(), sim.gpu.currentContextOn(b), "the green context is current on carrier B");
    }

    /**
     * Runs {@code step} on a virtual thread V that starts on carrier A, parks as it enters
     * {@code ctx}'s gate (held at the section's count until it waits there) and resumes on
     * carrier B; records V's driver calls.
     */
    private void parkOnTheGateThenResumeOnB(CudaContext ctx, Consumer<CudaContext> step) {
        interposer.around((function, args, real) -> {
            if (!Thread.currentThread().isVirtual() || !function.startsWith("cu")) {
                return real.call(); // a switch point is no driver call
            }
            Thread carrier = Carriers.current();
            long current = sim.gpu.currentContextOn(carrier).address();
            Object result = real.call();
            calls.add(new Call(function, carrier.getName(), current, result));
            return result;
        });
        Interposer.Stop atGate = interposer.stopAt(SwitchPoint.GATE_SECTION_COUNT).onThread("V");
        Background<Void> v = Background.run(carriers.virtualThreads(), "V", () -> step.accept(ctx));
        assertEquals(v.thread(), atGate.awaitArrival(), "V reached the gate");
        v.awaitFinishedOrWaiting();
        assertFalse(v.finished(), "V waits at the gate");
        carriers.mountOnB();
        atGate.release();
        v.join();
        assertEquals(List.of("carrier-A", "carrier-B"), carriers.mounts(),
                "V started on carrier A, parked once (at the gate) and resumed on carrier B");
    }

    /** V's calls of {@code function}. */
    private List<Call> callsOf(String function) {
        return calls.stream().filter(c -> c.function().equals(function)).toList();
    }

    @Test
    void aClosedBuffersFreeThatParksOnTheGateRunsUnderItsContextOnTheCarrierItResumedOn() throws Exception {
        CudaContext ctx = sim.context(); // the device pool off: the close frees with cuMemFree
        try (SmPartition partition = ctx.device().partitionSms(64, 2)) {
            DeviceBuffer buffer = ctx.allocate(256);
            greenCurrentOnB(partition.group(0));
            int live = sim.gpu.liveDeviceAllocations();
            parkOnTheGateThenResumeOnB(ctx, c -> buffer.close());

            List<Call> frees = callsOf("cuMemFree_v2");
            assertEquals(1, frees.size(), calls.toString());
            Call free = frees.get(0);
            assertEquals("carrier-B", free.carrier(), "the free ran after the park, on carrier B");
            assertEquals(ctx.handle().address(), free.context(), "under the buffer's context, made current on B: " + calls);
            assertEquals(FakeDriverApi.SUCCESS, free.result());
            assertEquals(free, calls.getLast(), "the free was V's last call");
            assertEquals(new Call("cuCtxSetCurrent", "carrier-B", partition.group(0).handle().address(), 0),
                    calls.get(calls.size() - 2), "made current on B immediately before the free");
            assertEquals(List.of(), sim.gpu.contextRefusals());
            assertEquals(live - 1, sim.gpu.liveDeviceAllocations(), "freed at the close, not left to a retry");
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        }
        ctx.close();
    }

    @Test
    void aPoolTrimWhoseFreeParksOnTheGateFreesEveryBlockUnderItsContextOnTheCarrierItResumedOn() throws Exception {
        CudaContext ctx = sim.pooledContext();
        try (SmPartition partition = ctx.device().partitionSms(64, 2)) {
            ctx.allocate(1000).close();
            ctx.allocate(5000).close();
            assertEquals(2, ctx.diagnostics().devicePool().counters().retainedBlocks());
            greenCurrentOnB(partition.group(0));
            int live = sim.gpu.liveDeviceAllocations();
            parkOnTheGateThenResumeOnB(ctx, c -> c.diagnostics().devicePool().trim());

            List<Call> frees = callsOf("cuMemFree_v2");
            assertEquals(2, frees.size(), calls.toString());
            for (Call free : frees) {
                assertEquals("carrier-B", free.carrier());
                assertEquals(ctx.handle().address(), free.context(), "each free under the pool's context: " + calls);
                assertEquals(FakeDriverApi.SUCCESS, free.result());
            }
            assertEquals(List.of(), sim.gpu.contextRefusals());
            assertEquals(0, ctx.diagnostics().devicePool().counters().retainedBlocks());
            assertEquals(live - 2, sim.gpu.liveDeviceAllocations());
        }
        ctx.close();
    }

    @Test
    void aRelaxedCaptureOnAVirtualThreadEndsOnAnotherCarrierAndTheOthersAreRefusedBeforeTheDriver() throws Exception {
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        CudaContext ctx = sim.context();
        ctx.modules().load("a", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        try (Kernel add = ctx.modules().kernel("a", "add"); Stream stream = ctx.createStream();
                DeviceBuffer v = ctx.allocate(16)) {
            v.asInts().copyFrom(new int[] {1, 2, 3, 4});
            int[] got = new int[4];
            Background<Void> t = Background.run(carriers.virtualThreads(), "V", () -> {
                for (CaptureMode refused : List.of(CaptureMode.GLOBAL, CaptureMode.THREAD_LOCAL)) {
                    sim.faults.countCalls();
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> stream.beginCapture(refused));
                    assertTrue(e.getMessage().contains("Capture in RELAXED mode, or on a platform thread"), e.getMessage());
                    assertEquals(Map.of(), sim.faults.counts(), "refused before any driver call");
                }
                StreamCapture capture = stream.beginCapture(CaptureMode.RELAXED); // on carrier A
                add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(10));
                carriers.mountOnB();
                Thread.yield(); // a park: the capture ends on carrier B
                try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
                    exec.launch(stream);
                    exec.launch(stream);
                }
                v.asInts().copyTo(got);
            });
            t.join();
            assertEquals(List.of("carrier-A", "carrier-B"), carriers.mounts());
            assertArrayEquals(new int[] {21, 22, 23, 24}, got, "the relaxed capture, ended on B, replayed twice");
        }
        assertEquals(List.of(), sim.gpu.contextRefusals());
        assertEquals(List.of(), sim.gpu.violations());
        ctx.close();
    }
}
