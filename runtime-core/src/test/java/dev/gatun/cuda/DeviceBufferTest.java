package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.transfer.StagingPool;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DeviceBufferTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @Test
    void heapArraysRoundTripThroughEveryPathAtOddSizes() {
        Random random = new Random(7);
        for (int n : new int[] {1, 3, 1023, 1 << 20, (int) StagingPool.BLOCK_BYTES / 4 + 5, 3 * (int) StagingPool.BLOCK_BYTES / 4 - 1}) {
            float[] in = new float[n];
            for (int i = 0; i < n; i++) {
                in[i] = random.nextFloat();
            }
            try (DeviceBuffer a = ctx.allocate(4L * n); DeviceBuffer b = ctx.allocate(4L * n)) {
                a.asFloats().copyFrom(in);
                b.asFloats().copyFrom(a.asFloats());
                float[] out = new float[n];
                java.util.Arrays.fill(out, Float.NaN);
                b.asFloats().copyTo(out);
                assertArrayEquals(in, out, "n=" + n);
            }
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void everyArrayTypeRoundTripsStraightThroughOneBlockAndThroughThePipeline() {
        Random random = new Random(11);
        // The last size is more than one staging block for the 8-byte types (the pipeline), less for the others.
        for (int n : new int[] {1, 5, 4097, (int) StagingPool.BLOCK_BYTES / 8 + 3}) {
            byte[] bytes = new byte[n];
            random.nextBytes(bytes);
            short[] shorts = new short[n];
            int[] ints = new int[n];
            long[] longs = new long[n];
            float[] floats = new float[n];
            double[] doubles = new double[n];
            for (int i = 0; i < n; i++) {
                shorts[i] = (short) random.nextInt();
                ints[i] = random.nextInt();
                longs[i] = random.nextLong();
                floats[i] = random.nextFloat();
                doubles[i] = random.nextDouble();
            }
            try (DeviceBuffer b = ctx.allocate(8L * n)) {
                DeviceView all = b.bytes();
                all.slice(0, n).copyFrom(bytes);
                byte[] bytesBack = new byte[n];
                all.slice(0, n).copyTo(bytesBack);
                assertArrayEquals(bytes, bytesBack, "bytes, n=" + n);
                b.as(ElementType.SHORT).slice(0, n).copyFrom(shorts);
                short[] shortsBack = new short[n];
                b.as(ElementType.SHORT).slice(0, n).copyTo(shortsBack);
                assertArrayEquals(shorts, shortsBack, "shorts, n=" + n);
                b.asInts().slice(0, n).copyFrom(ints);
                int[] intsBack = new int[n];
                b.asInts().slice(0, n).copyTo(intsBack);
                assertArrayEquals(ints, intsBack, "ints, n=" + n);
                b.asLongs().copyFrom(longs);
                long[] longsBack = new long[n];
                b.asLongs().copyTo(longsBack);
                assertArrayEquals(longs, longsBack, "longs, n=" + n);
                b.asFloats().slice(0, n).copyFrom(floats);
                float[] floatsBack = new float[n];
                b.asFloats().slice(0, n).copyTo(floatsBack);
                assertArrayEquals(floats, floatsBack, "floats, n=" + n);
                b.asDoubles().copyFrom(doubles);
                double[] doublesBack = new double[n];
                b.asDoubles().copyTo(doublesBack);
                assertArrayEquals(doubles, doublesBack, "doubles, n=" + n);
                // The device holds the doubles little-endian, as a byte view reads them back.
                byte[] firstDouble = new byte[8];
                all.slice(0, 8).copyTo(firstDouble);
                assertEquals(Double.doubleToRawLongBits(doubles[0]),
                        java.nio.ByteBuffer.wrap(firstDouble).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(), "n=" + n);
            }
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void nativeSegmentsAndAsyncPathsRoundTrip() {
        byte[] in = new byte[10_007];
        new Random(3).nextBytes(in);
        Stream s = ctx.createStream();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer a = ctx.allocate(in.length); DeviceBuffer b = ctx.allocate(in.length)) {
            MemorySegment host = arena.allocate(in.length);
            host.copyFrom(MemorySegment.ofArray(in));
            a.bytes().copyFrom(host);
            s.copy(b.bytes(), a.bytes());
            s.upload(a.bytes().slice(0, 7), MemorySegment.ofArray(new byte[] {1, 2, 3, 4, 5, 6, 7}));
            s.synchronize();
            MemorySegment back = arena.allocate(in.length);
            b.bytes().copyTo(back);
            assertArrayEquals(in, back.toArray(ValueLayout.JAVA_BYTE));
            byte[] head = new byte[7];
            a.bytes().slice(0, 7).copyTo(head);
            assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7}, head);
        }
        s.close();
    }

    @Test
    void memsetAndFillWriteEveryElement() {
        Stream s = ctx.computeStream();
        try (DeviceBuffer b = ctx.allocate(64)) {
            s.memset(b.bytes(), (byte) 0x5a);
            s.fill(b.asInts().slice(4, 8), Float.floatToRawIntBits(2.5f));
            byte[] bytes = new byte[16];
            b.bytes().slice(0, 16).copyTo(bytes);
            for (byte x : bytes) {
                assertEquals(0x5a, x);
            }
            float[] floats = new float[8];
            b.asFloats().slice(4, 8).copyTo(floats);
            for (float f : floats) {
                assertEquals(2.5f, f);
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.fill(b.bytes().slice(1, 8), 0));
            assertTrue(e.getMessage().contains("4-byte aligned"), e.getMessage());
        }
    }

    @Test
    void badCopiesAreRejectedBeforeAnyDriverCall() {
        sim.faults.countCalls();
        try (DeviceBuffer a = ctx.allocate(64); DeviceBuffer b = ctx.allocate(32)) {
            Stream s = ctx.computeStream();
            assertThrows(IllegalArgumentException.class, () -> s.copy(b.bytes(), a.bytes()));
            assertThrows(IllegalArgumentException.class, () -> a.bytes().copyFrom(new byte[65]));
            assertThrows(IllegalArgumentException.class, () -> a.bytes().copyTo(new byte[63]));
            assertThrows(IndexOutOfBoundsException.class, () -> a.bytes().slice(60, 5));
            assertThrows(IndexOutOfBoundsException.class, () -> a.asInts().slice(-1, 1));
            assertThrows(IllegalArgumentException.class, () -> ctx.allocate(10).asFloats());
            assertThrows(IllegalArgumentException.class, () -> ctx.allocate(-1));
        }
        assertEquals(0, sim.faults.calls("cuMemcpyDtoDAsync_v2"));
        assertEquals(0, sim.faults.calls("cuMemcpyHtoDAsync_v2"));
        assertEquals(0, sim.faults.calls("cuMemcpyDtoHAsync_v2"));
    }

    @Test
    void useAfterCloseIsAnIllegalStateException() {
        DeviceBuffer b = ctx.allocate(16);
        DeviceView view = b.bytes();
        b.close();
        b.close(); // idempotent
        assertThrows(IllegalStateException.class, b::address);
        assertThrows(IllegalStateException.class, () -> view.copyFrom(new byte[16]));
        assertThrows(IllegalStateException.class, () -> ctx.computeStream().memset(view, (byte) 0));
    }

    @Test
    void aBufferClosedWhileQueuedWorkUsesItIsFreedOnlyAfterThatWork() {
        Stream s = ctx.createStream();
        DeviceBuffer busy = ctx.allocate(1 << 20);
        DeviceBuffer other = ctx.allocate(1 << 20);
        sim.gpu.hold(s.handle());
        s.copy(other.bytes(), busy.bytes());
        busy.close();
        other.close();
        ctx.reap();
        assertEquals(2, sim.gpu.liveDeviceAllocations(), "the queued copy still uses both");
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(2, ctx.diagnostics().counters().pendingRetirements());
        sim.gpu.release(s.handle());
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(0, ctx.diagnostics().counters().liveBytes());
        assertEquals(2, ctx.diagnostics().counters().syncFrees());
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
    }

    @Test
    void aStreamOrderedBufferIsFreedInThatStreamsOrderAtOnce() {
        Stream s = ctx.createStream();
        sim.gpu.hold(s.handle());
        DeviceBuffer b = s.allocate(4096);
        s.memset(b.bytes(), (byte) 1);
        b.close();
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements(), "no fence to wait for: the free is queued behind the work");
        assertEquals(1, ctx.diagnostics().counters().asyncFrees());
        assertEquals(1, sim.gpu.liveDeviceAllocations(), "not freed before the queued memset ran");
        sim.gpu.release(s.handle());
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
    }

    @Test
    void aStreamOrderedBufferUsedOnTwoStreamsWaitsForBothFences() {
        Stream s = ctx.createStream();
        Stream t = ctx.createStream();
        DeviceBuffer b = s.allocate(4096);
        sim.gpu.hold(t.handle());
        t.memset(b.bytes(), (byte) 2);
        b.close();
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
        sim.gpu.release(t.handle());
        ctx.reap();
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
        t.close();
    }

    @Test
    void theStreamAStreamOrderedBufferWasAllocatedOnStaysFencedAfterAnotherStreamUsedIt() {
        Stream s = ctx.createStream();
        Stream t = ctx.createStream();
        sim.gpu.hold(s.handle());
        DeviceBuffer b = s.allocate(4096);
        s.memset(b.bytes(), (byte) 1); // recorded on the allocating stream: nothing new to list
        t.memset(b.bytes(), (byte) 2); // t runs at once
        b.close();
        ctx.reap();
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements(), "the allocating stream's memset is still queued");
        assertEquals(1, sim.gpu.liveDeviceAllocations());
        sim.gpu.release(s.handle());
        ctx.reap();
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
        t.close();
    }

    @Test
    void synchronousCopiesWaitForWorkQueuedOnOtherStreams() {
        Stream s = ctx.createStream();
        try (DeviceBuffer b = ctx.allocate(8)) {
            b.bytes().copyFrom(new byte[8]);
            sim.gpu.hold(s.handle());
            s.memset(b.bytes(), (byte) 9);
            byte[] out = new byte[8];
            b.bytes().copyTo(out); // a host wait: the simulated GPU finishes the memset first
            assertArrayEquals(new byte[] {9, 9, 9, 9, 9, 9, 9, 9}, out);
        }
        s.close();
    }

    @Test
    void zeroByteBuffersNeedNoAllocation() {
        try (DeviceBuffer b = ctx.allocate(0)) {
            assertEquals(0, b.byteSize());
            b.bytes().copyFrom(new byte[0]);
            assertEquals(0, sim.gpu.liveDeviceAllocations());
        }
    }

    @Test
    void countersFollowAllocationsAndTransfers() {
        try (DeviceBuffer b = ctx.allocate(100)) {
            b.bytes().copyFrom(new byte[100]);
            b.bytes().copyTo(new byte[100]);
            ContextCounters c = ctx.diagnostics().counters();
            assertEquals(1, c.syncAllocations());
            assertEquals(100, c.liveBytes());
            assertEquals(1, c.hostToDeviceCopies());
            assertEquals(100, c.hostToDeviceBytes());
            assertEquals(1, c.deviceToHostCopies());
            assertEquals(100, c.deviceToHostBytes());
        }
        assertEquals(0, ctx.diagnostics().counters().liveBytes());
    }
}
