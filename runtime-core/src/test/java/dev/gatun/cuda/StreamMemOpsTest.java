package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Stream memory operations and mapped words on the simulated driver: writes land in stream order,
 * a wait holds its stream until another stream or the host writes the value, batches and batch
 * nodes run their operations in order, a capture records them as nodes that every replay runs;
 * sizes, alignment and unsupported flags are refused before the driver; a mapped word is freed
 * only after the streams that used it are done; a host wait on a value nothing writes is reported
 * (the real driver would hang), never hangs the test.
 */
class StreamMemOpsTest {

    private final FakeDriverApi gpu = new FakeDriverApi()
            .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS(), 1);
    private final Simulated sim = new Simulated(gpu);
    private final CudaContext ctx = sim.context();
    private final Stream a = ctx.createStream();
    private final Stream b = ctx.createStream();

    @AfterEach
    void nothingLeftOrMisused() {
        a.close();
        b.close();
        ctx.close();
        assertEquals(List.of(), gpu.violations());
        assertEquals(0, gpu.liveHostAllocations());
        assertEquals(0, gpu.liveDeviceAllocations());
    }

    private static int[] ints(DeviceBuffer buffer) {
        int[] out = new int[(int) (buffer.byteSize() / 4)];
        buffer.asInts().copyTo(out);
        return out;
    }

    @Test
    void writesOf32And64BitWordsLandInStreamOrder() {
        try (DeviceBuffer words = ctx.allocate(64)) {
            words.asInts().copyFrom(new int[16]);
            a.fill(words.asInts(), -1);
            a.memOps().write32(words.asInts().slice(3, 1), 0x1234_5678, WriteFlag.DEFAULT);
            a.memOps().write64(words.asLongs().slice(4, 1), 0x0102_0304_0506_0708L, WriteFlag.DEFAULT);
            long[] longs = new long[8];
            words.asLongs().copyTo(longs);
            assertEquals(0x0102_0304_0506_0708L, longs[4]);
            int[] got = ints(words);
            assertEquals(0x1234_5678, got[3]);
            assertEquals(-1, got[2]); // the fill before the write, not after
            assertEquals(-1, got[15]);
        }
    }

    @Test
    void aWarmedWriteOrWaitIsExactlyItsOneDriverCall() {
        try (DeviceBuffer words = ctx.allocate(16); MappedWord word = ctx.allocateMappedWord()) {
            DeviceView wide = words.asLongs().slice(1, 1);
            Runnable write = () -> a.memOps().write32(word, 3, WriteFlag.DEFAULT);
            Runnable write64 = () -> a.memOps().write64(wide, 5L, WriteFlag.DEFAULT);
            Runnable wait = () -> a.memOps().wait32(word, 3, WaitCondition.EQ, WaitFlag.DEFAULT);
            write.run(); // warm: the device's support is read once, the stream listed on the owners
            write64.run();
            wait.run();
            assertEquals(Map.of("cuStreamWriteValue32_v2", 1), sim.faults.callsOf(write));
            assertEquals(Map.of("cuStreamWriteValue64_v2", 1), sim.faults.callsOf(write64));
            assertEquals(Map.of("cuStreamWaitValue32_v2", 1), sim.faults.callsOf(wait));
            a.synchronize();
        }
    }

    @Test
    void aWaitHoldsItsStreamUntilAnotherStreamWritesTheValue() {
        try (DeviceBuffer flag = ctx.allocate(4); DeviceBuffer out = ctx.allocate(32)) {
            flag.asInts().copyFrom(new int[] {0});
            out.asInts().copyFrom(new int[] {9, 9, 9, 9, 9, 9, 9, 9});
            gpu.hold(b.handle());
            a.memOps().wait32(flag.asInts(), 5, WaitCondition.GEQ, WaitFlag.DEFAULT);
            a.fill(out.asInts(), 7);
            b.memOps().write32(flag.asInts(), 4, WriteFlag.DEFAULT); // not enough: GEQ 5
            b.memOps().write32(flag.asInts(), 6, WriteFlag.DEFAULT);
            assertFalse(a.query(), "the fill waits behind the wait, which waits for b");
            gpu.release(b.handle());
            assertTrue(a.query());
            assertArrayEquals(new int[] {7, 7, 7, 7, 7, 7, 7, 7}, ints(out));
        }
    }

    @Test
    void eachWaitConditionWaitsForWhatTheDriverDocuments() {
        gpu.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR(), 1);
        record Case(WaitCondition condition, int operand, int notYet, int enough) {
        }
        List<Case> cases = List.of(new Case(WaitCondition.GEQ, 10, 9, 10), new Case(WaitCondition.EQ, 3, 4, 3),
                new Case(WaitCondition.AND, 0b100, 0b011, 0b110), new Case(WaitCondition.NOR, 0xFFFF_FFF0, 0xF, 0x7));
        for (Case c : cases) {
            try (MappedWord word = ctx.allocateMappedWord(); DeviceBuffer out = ctx.allocate(4)) {
                out.asInts().copyFrom(new int[] {0});
                word.setInt(c.notYet);
                a.memOps().wait32(word, c.operand, c.condition, WaitFlag.DEFAULT);
                a.fill(out.asInts(), 1);
                assertFalse(a.query(), c.condition + " holds for " + c.notYet);
                word.setInt(c.enough);
                a.synchronize();
                assertArrayEquals(new int[] {1}, ints(out), c.condition + " lets " + c.enough + " through");
            }
        }
    }

    @Test
    void theHostSeesAStreamWriteThroughAMappedWord() {
        try (MappedWord word = ctx.allocateMappedWord()) {
            assertEquals(0L, word.getLong(), "a new word is 0");
            gpu.hold(a.handle());
            a.memOps().write32(word, 42, WriteFlag.DEFAULT);
            assertEquals(0, word.getInt(), "not before the stream runs the write");
            gpu.release(a.handle());
            assertEquals(42, word.getInt());
            a.memOps().write64(word, -3L, WriteFlag.DEFAULT);
            assertEquals(-3L, word.getLong());
        }
    }

    @Test
    void aMappedWordIsFreedOnlyOnceTheStreamsThatUsedItAreDone() {
        MappedWord word = ctx.allocateMappedWord();
        gpu.hold(a.handle());
        a.memOps().write32(word, 1, WriteFlag.DEFAULT);
        word.close();
        ctx.reap();
        assertEquals(1, gpu.liveHostAllocations(), "the queued write still uses it");
        assertThrows(IllegalStateException.class, word::getInt);
        assertThrows(IllegalStateException.class, () -> a.memOps().write32(word, 2, WriteFlag.DEFAULT));
        gpu.release(a.handle());
        ctx.reap();
        assertEquals(0, gpu.liveHostAllocations());
    }

    @Test
    void wrongSizesAlignmentAndUnsupportedFlagsAreRefusedBeforeTheDriver() {
        FakeDriverApi plain = new FakeDriverApi(); // reports no 64-bit, NOR or flush support
        Simulated other = new Simulated(plain);
        CudaContext c = other.context();
        try (Stream s = c.createStream(); DeviceBuffer words = c.allocate(64); MappedWord word = c.allocateMappedWord()) {
            words.asInts().copyFrom(new int[16]);
            StreamMemOps ops = s.memOps();
            DeviceView bytes = words.bytes();
            assertThrows(IllegalArgumentException.class, () -> ops.write32(words.asInts().slice(0, 2), 1, WriteFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class, () -> ops.write32(bytes.slice(2, 4), 1, WriteFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class, () -> ops.write64(bytes.slice(4, 8), 1, WriteFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class, () -> ops.write64(words.asLongs().slice(0, 1), 1, WriteFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class, () -> ops.wait64(word, 1, WaitCondition.EQ, WaitFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class,
                    () -> ops.wait32(words.asInts().slice(0, 1), 1, WaitCondition.NOR, WaitFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class,
                    () -> ops.wait32(word, 1, WaitCondition.EQ, WaitFlag.FLUSH));
            assertThrows(NullPointerException.class, () -> ops.write32(words.asInts().slice(0, 1), 1, null));
            assertThrows(IllegalArgumentException.class, () -> ops.batch(List.of()));
            List<MemOp> tooMany = new ArrayList<>();
            for (int i = 0; i < MemOp.MAX_BATCH + 1; i++) {
                tooMany.add(MemOp.write32(words.asInts().slice(0, 1), i, WriteFlag.DEFAULT));
            }
            assertThrows(IllegalArgumentException.class, () -> ops.batch(tooMany));
            assertEquals(0, plain.queuedOperations(s.handle()));
            assertArrayEquals(new int[16], ints(words), "nothing was written");
        }
        c.close();
        assertEquals(List.of(), plain.violations());
    }

    @Test
    void theSimulatedDriverRefusesWhatTheRealOneRefuses() {
        // Gatun checks first; the simulated driver must still refuse on its own (never kinder than the GPU).
        FakeDriverApi plain = new FakeDriverApi();
        Simulated other = new Simulated(plain);
        CudaContext c = other.context();
        try (Stream s = c.createStream(); DeviceBuffer words = c.allocate(64)) {
            var api = plain.api();
            long base = words.address();
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuStreamWriteValue32_v2(s.handle(), base + 2, 1, 0));
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuStreamWriteValue32_v2(s.handle(), base, 1, 2));
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuStreamWaitValue32_v2(s.handle(), base, 1, 7));
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuStreamWriteValue32_v2(s.handle(), 0x10, 1, 0));
            assertEquals(CudaDriver.CUDA_ERROR_NOT_SUPPORTED(), api.cuStreamWriteValue64_v2(s.handle(), base, 1, 0));
            assertEquals(CudaDriver.CUDA_ERROR_NOT_SUPPORTED(),
                    api.cuStreamWaitValue32_v2(s.handle(), base, 1, CudaDriver.CU_STREAM_WAIT_VALUE_NOR()));
            assertEquals(0, plain.queuedOperations(s.handle()));
        }
        c.close();
    }

    @Test
    void aHostWaitOnAValueNothingWritesIsReportedInsteadOfHanging() {
        FakeDriverApi alone = new FakeDriverApi();
        Simulated other = new Simulated(alone);
        CudaContext c = other.context();
        try (Stream s = c.createStream(); MappedWord word = c.allocateMappedWord()) {
            s.memOps().wait32(word, 1, WaitCondition.EQ, WaitFlag.DEFAULT);
            s.synchronize(); // the real driver never returns
            assertTrue(alone.violations().stream().anyMatch(v -> v.contains("would never return")), alone.violations().toString());
            word.setInt(1);
            s.synchronize();
            assertEquals(0, alone.queuedOperations(s.handle()));
        }
        c.close();
    }

    @Test
    void aBatchRunsItsOperationsInOrder() {
        try (DeviceBuffer words = ctx.allocate(16); MappedWord done = ctx.allocateMappedWord()) {
            words.asInts().copyFrom(new int[4]);
            DeviceView first = words.asInts().slice(0, 1);
            a.memOps().batch(List.of(MemOp.write32(first, 3, WriteFlag.DEFAULT),
                    MemOp.wait32(first, 3, WaitCondition.EQ, WaitFlag.DEFAULT),
                    MemOp.write64(words.asLongs().slice(1, 1), 77L, WriteFlag.DEFAULT),
                    MemOp.write32(done, 1, WriteFlag.DEFAULT)));
            a.synchronize();
            assertArrayEquals(new int[] {3, 0, 77, 0}, ints(words));
            assertEquals(1, done.getInt());
        }
    }

    @Test
    void aCapturedWriteIsANodeThatEveryReplayRuns() {
        try (DeviceBuffer word = ctx.allocate(4); MappedWord seen = ctx.allocateMappedWord()) {
            word.asInts().copyFrom(new int[] {0});
            Graph g;
            try (StreamCapture capture = a.beginCapture(CaptureMode.THREAD_LOCAL)) {
                a.fill(word.asInts(), 5);
                a.memOps().write32(seen, 8, WriteFlag.DEFAULT);
                g = capture.end();
            }
            assertEquals(0, seen.getInt(), "captured, not run");
            try (g; GraphExec exec = g.instantiate()) {
                for (int replay = 1; replay <= 3; replay++) {
                    seen.setInt(0);
                    word.asInts().copyFrom(new int[] {0});
                    exec.launch(a);
                    a.synchronize();
                    assertEquals(8, seen.getInt(), "replay " + replay);
                    assertArrayEquals(new int[] {5}, ints(word), "replay " + replay);
                }
            }
        }
    }

    @Test
    void aBatchNodeRunsAtEveryLaunchAndItsGraphHoldsWhatItNames() {
        DeviceBuffer word = ctx.allocate(8);
        MappedWord flag = ctx.allocateMappedWord();
        word.asInts().copyFrom(new int[] {0, 0});
        try (Graph g = ctx.createGraph()) {
            GraphNode fill = g.addFill(word.asInts(), 4);
            GraphNode ops = g.addBatchMemOps(List.of(MemOp.wait32(word.asInts().slice(0, 1), 4, WaitCondition.EQ,
                    WaitFlag.DEFAULT), MemOp.write32(word.asInts().slice(1, 1), 9, WriteFlag.DEFAULT),
                    MemOp.write32(flag, 1, WriteFlag.DEFAULT)), fill);
            assertEquals(GraphNode.Kind.BATCH_MEM_OP, ops.kind());
            word.close(); // the graph holds it
            try (GraphExec exec = g.instantiate()) {
                exec.launch(a);
                a.synchronize();
                assertEquals(1, flag.getInt());
                assertEquals(List.of(), gpu.danglingGraphUses());
                flag.close();
                exec.launch(a);
                a.synchronize();
            }
        }
        ctx.reap();
        assertEquals(List.of(), gpu.danglingGraphUses());
    }

    @Test
    void aClosedStreamOrWordOfAnotherContextIsRefused() {
        Simulated two = new Simulated(new FakeDriverApi().deviceCount(2));
        CudaContext first = two.context();
        CudaContext second = two.cuda.device(1).context();
        try (Stream s = first.createStream(); MappedWord foreign = second.allocateMappedWord();
                DeviceBuffer foreignBuffer = second.allocate(4)) {
            assertThrows(IllegalArgumentException.class, () -> s.memOps().write32(foreign, 1, WriteFlag.DEFAULT));
            assertThrows(IllegalArgumentException.class,
                    () -> s.memOps().write32(foreignBuffer.asInts(), 1, WriteFlag.DEFAULT));
            Stream closed = first.createStream();
            closed.close();
            try (MappedWord mine = first.allocateMappedWord()) {
                assertThrows(IllegalStateException.class, () -> closed.memOps().write32(mine, 1, WriteFlag.DEFAULT));
                assertEquals(0, mine.getInt());
            }
        }
        first.close();
        second.close();
    }
}
