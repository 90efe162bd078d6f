package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Copies round-trip random bytes of odd sizes through every path, into poisoned destinations. */
@RequiresGpu
class MemoryGpuTest {

    private static final byte HOST_POISON = (byte) 0xA5;
    private static final byte DEVICE_POISON = (byte) 0x5A;

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 4093, (1 << 20) + 7})
    void everyCopyPathRoundTrips(int n) {
        roundTripEveryPath(n);
    }

    /** The sizes that take minutes under compute-sanitizer (tag "large", left out of its runs). */
    @ParameterizedTest
    @Tag(GpuTags.LARGE)
    @ValueSource(ints = {(64 << 20) + 5, (256 << 20) - 1})
    void everyCopyPathRoundTripsAtLargeSizes(int n) {
        roundTripEveryPath(n);
    }

    private static void roundTripEveryPath(int n) {
        long seed = Gpu.seed();
        byte[] data = new byte[n];
        new Random(seed).nextBytes(data);
        String why = "n=" + n + " seed=" + seed;
        CudaContext ctx = Gpu.context();
        Stream s = ctx.createStream();
        try (DeviceBuffer a = ctx.allocate(n); DeviceBuffer b = ctx.allocate(n); PinnedBuffer pinned = ctx.allocatePinned(n);
                Arena arena = Arena.ofConfined()) {
            // heap -> device (staged, synchronous), device -> heap
            s.memset(a.bytes(), DEVICE_POISON);
            s.synchronize();
            a.bytes().copyFrom(data);
            assertArrayEquals(data, download(a), "heap sync " + why);

            // device -> device, asynchronous then synchronous
            s.memset(b.bytes(), DEVICE_POISON);
            s.copy(b.bytes(), a.bytes());
            s.synchronize();
            assertArrayEquals(data, download(b), "d2d async " + why);
            s.memset(b.bytes(), DEVICE_POISON);
            s.synchronize();
            b.bytes().copyFrom(a.bytes());
            assertArrayEquals(data, download(b), "d2d sync " + why);

            // native segment <-> device, synchronous
            MemorySegment nat = arena.allocate(n);
            nat.copyFrom(MemorySegment.ofArray(data));
            s.memset(b.bytes(), DEVICE_POISON);
            s.synchronize();
            b.bytes().copyFrom(nat);
            nat.fill(HOST_POISON);
            b.bytes().copyTo(nat);
            assertArrayEquals(data, nat.toArray(ValueLayout.JAVA_BYTE), "native sync " + why);

            // pinned, asynchronous both ways on one stream
            pinned.segment().copyFrom(MemorySegment.ofArray(data));
            s.memset(b.bytes(), DEVICE_POISON);
            s.upload(b.bytes(), pinned, 0);
            s.synchronize();
            pinned.segment().fill(HOST_POISON);
            s.download(pinned, 0, b.bytes());
            assertArrayEquals(data, pinned.segment().toArray(ValueLayout.JAVA_BYTE), "pinned async " + why);

            // any host segment, asynchronous through staging; the source is reused at once
            byte[] reused = data.clone();
            s.memset(b.bytes(), DEVICE_POISON);
            s.upload(b.bytes(), MemorySegment.ofArray(reused));
            Arrays.fill(reused, HOST_POISON);
            s.synchronize();
            assertArrayEquals(data, download(b), "staged async " + why);
        } finally {
            s.close();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1023, (5 << 20) + 3})
    void typedViewsRoundTripFloatsAndTheirSlices(int n) {
        long seed = Gpu.seed();
        Random r = new Random(seed);
        float[] in = new float[n];
        for (int i = 0; i < n; i++) {
            in[i] = r.nextFloat() * 2 - 1;
        }
        try (DeviceBuffer d = Gpu.context().allocate(4L * n)) {
            d.asFloats().copyFrom(in);
            float[] out = new float[n];
            Arrays.fill(out, Float.NaN);
            d.asFloats().copyTo(out);
            assertArrayEquals(in, out, "seed=" + seed);
            int half = n / 2;
            float[] tail = new float[n - half];
            Arrays.fill(tail, Float.NaN);
            d.asFloats().slice(half, n - half).copyTo(tail);
            assertArrayEquals(Arrays.copyOfRange(in, half, n), tail, "slice, seed=" + seed);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {4, 4096 + 12})
    void fillAndMemsetWriteEveryElement(int n) {
        CudaContext ctx = Gpu.context();
        try (DeviceBuffer d = ctx.allocate(n)) {
            ctx.computeStream().memset(d.bytes(), (byte) 0x11);
            ctx.computeStream().fill(d.asInts(), Float.floatToRawIntBits(-3.25f));
            float[] out = new float[n / 4];
            d.asFloats().copyTo(out);
            for (float f : out) {
                assertEquals(-3.25f, f);
            }
        }
    }

    /**
     * A synchronous device-to-device copy waits for a kernel still writing its source on another
     * stream: the kernel holds until a host flag is set (by another thread, a little later), and
     * the copy must see what it wrote.
     */
    @org.junit.jupiter.api.Test
    void aSynchronousCopyWaitsForPendingWritesOnOtherStreams() throws Exception {
        CudaContext ctx = Gpu.context();
        int n = 1 << 20;
        Stream s = ctx.createStream();
        try (dev.gatun.cuda.Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill");
                PinnedBuffer flag = ctx.allocatePinned(4); DeviceBuffer src = ctx.allocate(4L * n);
                DeviceBuffer dst = ctx.allocate(4L * n)) {
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            src.asFloats().copyFrom(new float[n]);
            spin.launch(s, dev.gatun.cuda.LaunchConfig.of(64, 256), dev.gatun.cuda.KernelArg.address(flag.segment().address()),
                    dev.gatun.cuda.KernelArg.pointer(src), dev.gatun.cuda.KernelArg.f32(7.5f), dev.gatun.cuda.KernelArg.i64(n));
            Thread setter = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            });
            dst.asFloats().copyFrom(src.asFloats()); // must wait for the kernel on s
            setter.join();
            float[] out = new float[n];
            Arrays.fill(out, Float.NaN);
            dst.asFloats().copyTo(out);
            for (int i = 0; i < n; i += 4099) {
                assertEquals(7.5f, out[i], "element " + i);
            }
            assertEquals(7.5f, out[n - 1]);
        } finally {
            s.close();
        }
    }

    private static byte[] download(DeviceBuffer b) {
        byte[] out = new byte[(int) b.byteSize()];
        Arrays.fill(out, HOST_POISON);
        b.bytes().copyTo(out);
        return out;
    }
}
