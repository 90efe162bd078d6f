package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PeerLink;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.TestReporter;

/**
 * Two devices of one host: peer access, peer copies, a kernel reading a peer's memory, and the
 * peer-copy bandwidth with and without peer access. Needs two GPUs (the nvidia-h200-x2 kind);
 * with one it is skipped, saying so. NVLink multicast is never touched.
 */
@RequiresGpu
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MultiGpuTest {

    private CudaContext d0;
    private CudaContext d1;

    @BeforeEach
    void twoDevices() {
        int count = Cuda.system().deviceCount();
        assumeTrue(count >= 2, "needs two CUDA devices; this host has " + count + " (run it on nvidia-h200-x2)");
        d0 = Cuda.system().device(0).context();
        d1 = Cuda.system().device(1).context();
    }

    @Test
    @Order(1)
    void peerCopyBandwidthWithoutThenWithPeerAccess(TestReporter report) {
        long bytes = 256L << 20;
        try (DeviceBuffer a = d0.allocate(bytes); DeviceBuffer b = d1.allocate(bytes)) {
            float without = copyMillis(b, a);
            if (!d1.isPeerAccessEnabled(d0)) {
                d1.enablePeerAccess(d0);
            }
            if (!d0.isPeerAccessEnabled(d1)) {
                d0.enablePeerAccess(d1);
            }
            float with = copyMillis(b, a);
            report.publishEntry("peer copy 256 MiB", String.format(Locale.ROOT,
                    "without peer access %.3f ms (%.1f GB/s), with %.3f ms (%.1f GB/s)",
                    without, bytes / without / 1e6, with, bytes / with / 1e6));
            assertTrue(without > 0 && with > 0);
        }
    }

    /** Median of five timed 0 -> 1 copies on device 1's stream, after one warm-up. */
    private float copyMillis(DeviceBuffer to, DeviceBuffer from) {
        Stream s = d1.computeStream();
        float[] ms = new float[5];
        try (Event start = d1.createTimingEvent(); Event end = d1.createTimingEvent()) {
            s.copy(to.bytes(), from.bytes());
            for (int i = 0; i < ms.length; i++) {
                start.record(s);
                s.copy(to.bytes(), from.bytes());
                end.record(s);
                end.synchronize();
                ms[i] = end.elapsedMillis(start);
            }
        }
        Arrays.sort(ms);
        return ms[ms.length / 2];
    }

    @Test
    @Order(2)
    void peerAccessBothWaysAndTheLinkIsReported(TestReporter report) {
        PeerLink forward = d0.device().linkTo(d1.device());
        PeerLink backward = d1.device().linkTo(d0.device());
        report.publishEntry("links", forward + " / " + backward);
        assertTrue(d0.device().canAccessPeer(d1.device()));
        d0.enablePeerAccess(d1);
        d0.enablePeerAccess(d1); // idempotent
        d1.enablePeerAccess(d0);
        assertTrue(d0.isPeerAccessEnabled(d1) && d1.isPeerAccessEnabled(d0));
        assertTrue(forward.accessSupported() && backward.accessSupported());
    }

    @Test
    @Order(3)
    void oddSizesRoundTripZeroToOneToZeroSyncAndAsync() {
        long seed = Gpu.seed();
        for (int n : new int[] {1, 4093, (3 << 20) + 5, (64 << 20) - 3}) {
            byte[] data = new byte[n];
            new Random(seed + n).nextBytes(data);
            try (DeviceBuffer a = d0.allocate(n); DeviceBuffer b = d1.allocate(n); DeviceBuffer back = d0.allocate(n)) {
                a.bytes().copyFrom(data);
                d1.computeStream().memset(b.bytes(), (byte) 0x5A);
                d1.computeStream().synchronize();
                b.bytes().copyFrom(a.bytes()); // synchronous 0 -> 1
                d0.computeStream().memset(back.bytes(), (byte) 0x5A);
                Stream s = d0.computeStream();
                s.copy(back.bytes(), b.bytes()); // asynchronous 1 -> 0
                s.synchronize();
                byte[] out = new byte[n];
                Arrays.fill(out, (byte) 0xA5);
                back.bytes().copyTo(out);
                assertArrayEquals(data, out, "n=" + n + " seed=" + seed);
            }
        }
    }

    @Test
    @Order(4)
    void aKernelOnDeviceOneReadsDeviceZerosMemory() {
        String source = """
                extern "C" __global__ void twice(const float* remote, float* local, int n) {
                    int i = blockIdx.x * blockDim.x + threadIdx.x;
                    if (i < n) local[i] = 2.0f * remote[i];
                }
                """;
        if (!d1.isPeerAccessEnabled(d0)) {
            d1.enablePeerAccess(d0);
        }
        int n = (1 << 20) + 3;
        float[] in = new float[n];
        Random r = new Random(Gpu.seed());
        for (int i = 0; i < n; i++) {
            in[i] = r.nextFloat();
        }
        NvrtcLibrary.system().compiler().load(d1.modules(), "peer-twice", source, CompileOptions.of(
                CompileTarget.ptx(d1.device().capabilities())), "twice");
        try (Kernel k = d1.modules().kernel("peer-twice", "twice"); DeviceBuffer remote = d0.allocate(4L * n);
                DeviceBuffer local = d1.allocate(4L * n)) {
            remote.asFloats().copyFrom(in);
            d1.computeStream().fill(local.asInts(), Float.floatToRawIntBits(Float.NaN));
            k.launch(d1.computeStream(), LaunchConfig.covering(n, 256), KernelArg.pointer(remote), KernelArg.pointer(local),
                    KernelArg.i32(n));
            float[] out = new float[n];
            local.asFloats().copyTo(out);
            for (int i = 0; i < n; i++) {
                assertEquals(2 * in[i], out[i], "element " + i);
            }
        } finally {
            d1.modules().unload("peer-twice");
        }
    }
}
