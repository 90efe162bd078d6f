package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Several devices from one process, on the simulated driver: bookkeeping and checks, no GPU needed. */
class MultiDeviceTest {

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(3));
    private final CudaContext d0 = sim.cuda.device(0).context();
    private final CudaContext d1 = sim.cuda.device(1).context();
    private final CudaContext d2 = sim.cuda.device(2).context();

    @Test
    void peerAccessIsEnabledOncePerOrderedPairEvenWhenManyThreadsAsk() throws Exception {
        sim.faults.countCalls();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch start = new CountDownLatch(1);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                calls.add(pool.submit(() -> {
                    start.await();
                    d0.enablePeerAccess(d1);
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : calls) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(1, sim.faults.calls("cuCtxEnablePeerAccess"));
        assertTrue(d0.isPeerAccessEnabled(d1));
        assertFalse(d1.isPeerAccessEnabled(d0), "ordered: 1 -> 0 is a separate pair");
        d1.enablePeerAccess(d0);
        assertEquals(2, sim.faults.calls("cuCtxEnablePeerAccess"));
    }

    @Test
    void alreadyEnabledIsNotAnError() {
        sim.faults.replaceOnce("cuCtxEnablePeerAccess", 704); // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
        d0.enablePeerAccess(d2);
        assertTrue(d0.isPeerAccessEnabled(d2));
        assertThrows(IllegalArgumentException.class, () -> d0.enablePeerAccess(d0));
    }

    @Test
    void theLinkIsReportedPerOrderedPair() {
        Device a = sim.cuda.device(0);
        Device b = sim.cuda.device(1);
        assertTrue(a.canAccessPeer(b));
        assertFalse(a.canAccessPeer(a));
        PeerLink link = a.linkTo(b);
        assertEquals(0, link.from());
        assertEquals(1, link.to());
        assertTrue(link.accessSupported());
        assertTrue(link.nativeAtomics());
        assertEquals(1, link.performanceRank());
    }

    @Test
    void peerCopiesMoveBytesBothWaysSyncAndAsyncAndAreBoundsChecked() {
        byte[] data = new byte[10_007];
        new java.util.Random(11).nextBytes(data);
        try (DeviceBuffer a = d0.allocate(data.length); DeviceBuffer b = d1.allocate(data.length);
                DeviceBuffer back = d0.allocate(data.length); DeviceBuffer small = d1.allocate(16)) {
            a.bytes().copyFrom(data);
            b.bytes().copyFrom(a.bytes()); // synchronous peer copy, 0 -> 1
            Stream s1 = d1.computeStream();
            s1.copy(back.bytes(), b.bytes()); // asynchronous, 1 -> 0 on device 1's stream
            s1.synchronize();
            byte[] out = new byte[data.length];
            back.bytes().copyTo(out);
            assertArrayEquals(data, out);
            sim.faults.countCalls();
            assertThrows(IllegalArgumentException.class, () -> s1.copy(small.bytes(), a.bytes()));
            IllegalArgumentException third = assertThrows(IllegalArgumentException.class,
                    () -> d2.computeStream().copy(b.bytes(), a.bytes()), "a third device's stream cannot run a 0 -> 1 copy");
            assertTrue(third.getMessage().contains("queue it on a stream of device 0 or 1"), third.getMessage());
            assertEquals(0, sim.faults.calls("cuMemcpyPeerAsync"));
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aKernelMayUseAPeersMemoryOnlyAfterPeerAccessIsEnabled() {
        d1.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
        try (Kernel k = d1.modules().kernel("m", "k"); DeviceBuffer remote = d0.allocate(64)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> k.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(remote)));
            assertTrue(e.getMessage().contains("enablePeerAccess"), e.getMessage());
            d1.enablePeerAccess(d0);
            k.launch(d1.computeStream(), LaunchConfig.of(1, 1), KernelArg.pointer(remote));
            assertEquals(1, sim.gpu.launches());
        }
    }

    @Test
    void streamsWaitOnAnotherDevicesFenceAndEachContextKeepsItsOwnGate() throws Exception {
        try (Stream s0 = d0.createStream(); Stream s1 = d1.createStream(); DeviceBuffer b = d0.allocate(8)) {
            sim.gpu.hold(s0.handle());
            s0.memset(b.bytes(), (byte) 1);
            Fence done = s0.recordFence();
            s1.waitFor(done);
            assertTrue(done.isConsumed());
            // A global capture on device 0 holds device 0's gate only: device 1 still allocates.
            var ticket = d0.state().gate().enterCapture();
            try {
                d1.allocate(16).close();
                d0.setGateTimeout(java.time.Duration.ZERO);
                java.util.concurrent.CompletionException blocked = assertThrows(java.util.concurrent.CompletionException.class,
                        () -> java.util.concurrent.CompletableFuture.supplyAsync(() -> d0.allocate(16)).join());
                assertTrue(blocked.getCause() instanceof CaptureActiveException, blocked.toString());
            } finally {
                d0.state().gate().exitCapture(ticket);
            }
            sim.gpu.release(s0.handle());
        }
    }
}
