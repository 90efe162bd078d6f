package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The simulated driver's host waits and the checks that depend on them, through raw driver calls:
 * a wait finishes only what the real driver waits for, so that a test of Gatun fails when Gatun
 * waits on the wrong stream, and a free is checked against the work the GPU has not run yet.
 */
class SimulatedHostWaitsTest {

    private static final int SUCCESS = 0;
    private static final int N = 16;

    private final FakeDriverApi gpu = new FakeDriverApi();
    private final DriverApi api = gpu.api();
    private final MemorySegment context = gpu.primaryContext(0);
    private final Arena arena = Arena.ofConfined();

    /** As a C program does first: events, graphs and executables are created in the current context. */
    @BeforeEach
    void makeTheContextCurrent() {
        check(api.cuCtxSetCurrent(context));
    }

    private static void check(int result) {
        assertEquals(SUCCESS, result);
    }

    private MemorySegment event() {
        MemorySegment out = arena.allocate(8);
        check(api.cuEventCreate(out, CudaDriver.CU_EVENT_DISABLE_TIMING()));
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    private int word(long address) {
        return MemorySegment.ofArray(gpu.deviceBytes(address, 4)).get(ValueLayout.JAVA_INT_UNALIGNED, 0);
    }

    @Test
    void aStreamSynchronizeLeavesOtherStreamsWorkQueued() {
        MemorySegment a = gpu.foreignStream(context);
        MemorySegment b = gpu.foreignStream(context);
        long x = gpu.foreignDeviceMemory(context, 4L * N);
        gpu.hold(a);
        gpu.hold(b);
        check(api.cuMemsetD32Async(x, 1, N, a));
        check(api.cuMemsetD32Async(x + 4, 2, 1, b));
        check(api.cuStreamSynchronize(a));
        assertEquals(1, word(x), "the synchronized stream's work ran");
        assertEquals(1, word(x + 4), "the other stream's work still waits: the GPU is busy there");
        assertEquals(1, gpu.queuedOperations(b));
        check(api.cuStreamSynchronize(b));
        assertEquals(2, word(x + 4));
    }

    @Test
    void aStreamSynchronizeRunsTheOtherStreamsWorkItWaitsForAndNoMore() {
        MemorySegment a = gpu.foreignStream(context);
        MemorySegment b = gpu.foreignStream(context);
        long x = gpu.foreignDeviceMemory(context, 4L * N);
        MemorySegment e = event();
        gpu.hold(b);
        check(api.cuMemsetD32Async(x, 5, 1, b));
        check(api.cuEventRecord(e, b));
        check(api.cuMemsetD32Async(x, 6, 1, b)); // after the record: not waited for
        check(api.cuStreamWaitEvent(a, e, 0));
        check(api.cuStreamSynchronize(a));
        assertEquals(5, word(x), "the work before the awaited record ran, the work after it did not");
        assertEquals(1, gpu.queuedOperations(b));
        check(api.cuEventSynchronize(e));
        assertEquals(1, gpu.queuedOperations(b), "an event synchronize waits for its record, not for later work");
    }

    @Test
    void aHostWaitIsCountedAsBlockingOnlyWhenWhatItWaitsForHasNotRun() {
        MemorySegment a = gpu.foreignStream(context);
        long x = gpu.foreignDeviceMemory(context, 4L * N);
        MemorySegment e = event();
        check(api.cuMemsetD32Async(x, 1, N, a));
        check(api.cuEventRecord(e, a));
        check(api.cuStreamSynchronize(a));
        check(api.cuEventSynchronize(e));
        check(api.cuCtxSynchronize());
        assertEquals(List.of(), gpu.blockingHostWaits(), "the GPU was idle: every wait returned at once");
        gpu.hold(a);
        check(api.cuMemsetD32Async(x, 2, N, a));
        check(api.cuEventRecord(e, a));
        check(api.cuEventSynchronize(e));
        check(api.cuEventSynchronize(e)); // its record ran: no wait
        gpu.hold(a);
        check(api.cuMemsetD32Async(x, 3, N, a));
        check(api.cuStreamSynchronize(a));
        gpu.hold(a);
        check(api.cuMemsetD32Async(x, 4, N, a));
        check(api.cuCtxSynchronize());
        assertEquals(List.of("cuEventSynchronize", "cuStreamSynchronize", "cuCtxSynchronize"), gpu.blockingHostWaits());
        assertEquals(4, word(x));
    }

    @Test
    void aCapturingStreamCannotBeQueriedOrSynchronizedAndAnEventRecordedInACaptureCannotBeWaitedOnByTheHost() {
        MemorySegment s = gpu.foreignStream(context);
        MemorySegment e = event();
        MemorySegment out = arena.allocate(8);
        check(api.cuStreamBeginCapture_v2(s, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        check(api.cuEventRecord(e, s));
        assertEquals(CudaDriver.CUDA_ERROR_CAPTURED_EVENT(), api.cuEventQuery(e));
        assertEquals(CudaDriver.CUDA_ERROR_CAPTURED_EVENT(), api.cuEventSynchronize(e));
        assertEquals(CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED(), api.cuStreamQuery(s));
        assertEquals(CudaDriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED(), api.cuStreamEndCapture(s, out),
                "the query invalidated the capture");
        check(api.cuEventRecord(e, s));
        check(api.cuEventQuery(e));
    }

    @Test
    void anEventRecordedInACaptureThatEndedIsNotValidUntilRecordedAgain() {
        MemorySegment s = gpu.foreignStream(context);
        MemorySegment other = gpu.foreignStream(context);
        MemorySegment e = event();
        MemorySegment graph = arena.allocate(8);
        check(api.cuStreamBeginCapture_v2(s, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        check(api.cuEventRecord(e, s));
        check(api.cuStreamEndCapture(s, graph));
        int invalid = CudaDriver.CUDA_ERROR_INVALID_VALUE();
        assertEquals(invalid, api.cuEventSynchronize(e), "the capture the record went into is over");
        assertEquals(invalid, api.cuEventQuery(e));
        assertEquals(invalid, api.cuStreamWaitEvent(other, e, 0));
        check(api.cuStreamBeginCapture_v2(s, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        assertEquals(invalid, api.cuEventSynchronize(e), "a new capture on the same stream is another capture");
        check(api.cuStreamEndCapture(s, graph));
        check(api.cuEventRecord(e, s));
        check(api.cuEventSynchronize(e));
        check(api.cuStreamWaitEvent(other, e, 0));
    }

    @Test
    void aStreamWaitingOnAnEventRecordedInACaptureJoinsItAndMustBeJoinedBackBeforeItEnds() {
        MemorySegment origin = gpu.foreignStream(context);
        MemorySegment joined = gpu.foreignStream(context);
        long x = gpu.foreignDeviceMemory(context, 4L * N);
        MemorySegment fork = event();
        MemorySegment back = event();
        MemorySegment out = arena.allocate(8);
        check(api.cuStreamBeginCapture_v2(origin, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        check(api.cuEventRecord(fork, origin));
        check(api.cuStreamWaitEvent(joined, fork, 0));
        check(api.cuStreamIsCapturing(joined, out));
        assertEquals(CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE(), out.get(ValueLayout.JAVA_INT, 0), "joined");
        check(api.cuMemsetD32Async(x, 3, N, joined));
        assertEquals(0, word(x), "captured, not run");
        assertEquals(CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNMATCHED(), api.cuStreamEndCapture(joined, out),
                "only the stream the capture began on ends it");
        assertEquals(CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNJOINED(), api.cuStreamEndCapture(origin, out),
                "the joined stream's work was never waited for");
        check(api.cuStreamIsCapturing(joined, out));
        assertEquals(CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE(), out.get(ValueLayout.JAVA_INT, 0), "left with the end");

        check(api.cuStreamBeginCapture_v2(origin, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        check(api.cuEventRecord(fork, origin));
        check(api.cuStreamWaitEvent(joined, fork, 0));
        check(api.cuMemsetD32Async(x, 3, N, joined));
        check(api.cuEventRecord(back, joined));
        check(api.cuStreamWaitEvent(origin, back, 0));
        check(api.cuStreamEndCapture(origin, out));
        MemorySegment graph = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        check(api.cuGraphInstantiateWithFlags(out, graph, 0));
        check(api.cuGraphLaunch(MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0)), origin));
        assertEquals(3, word(x), "the replay runs the joined stream's work");
        assertEquals(List.of(), gpu.violations());
    }

    @Test
    void aStreamOrderedFreeIsCheckedWhenTheGpuRunsIt() {
        MemorySegment a = gpu.foreignStream(context);
        MemorySegment b = gpu.foreignStream(context);
        long ordered = gpu.foreignDeviceMemory(context, 4L * N);
        long unordered = gpu.foreignDeviceMemory(context, 4L * N);
        MemorySegment e = event();
        gpu.hold(b);
        check(api.cuMemsetD32Async(ordered, 1, N, b));
        check(api.cuEventRecord(e, b));
        check(api.cuStreamWaitEvent(a, e, 0));
        check(api.cuMemFreeAsync(ordered, a)); // runs after b's memset: legal
        check(api.cuMemsetD32Async(unordered, 1, N, b));
        check(api.cuMemFreeAsync(unordered, gpu.foreignStream(context))); // runs at once, before b's memset
        gpu.release(b);
        List<String> violations = gpu.violations();
        assertEquals(2, violations.size(), violations.toString());
        assertEquals("a stream-ordered free (cuMemFreeAsync) of 0x" + Long.toHexString(unordered)
                + " ran while queued work still uses it", violations.get(0));
        assertTrue(violations.get(1).contains("failed as the GPU ran it"), "then the memset ran on freed memory: "
                + violations.get(1));
    }

    @Test
    void aGraphLaunchOfFreedMemoryIsAViolationNotACrash() {
        MemorySegment s = gpu.foreignStream(context);
        long x = gpu.foreignDeviceMemory(context, 4L * N);
        MemorySegment out = arena.allocate(8);
        check(api.cuStreamBeginCapture_v2(s, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        check(api.cuMemsetD32Async(x, 9, N, s));
        check(api.cuStreamEndCapture(s, out));
        MemorySegment graph = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        check(gpu.freeForeignDeviceMemory(x)); // the graph is not an executable yet: nothing to flag
        check(api.cuGraphInstantiateWithFlags(out, graph, 0));
        check(api.cuGraphLaunch(MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0)), s));
        assertEquals(List.of("cuGraphLaunch of an executable whose node uses freed device memory 0x"
                + Long.toHexString(x)), gpu.violations());
    }

    @Test
    void anExecutableChangedWhileAnotherThreadIsInsideALaunchOfItIsAViolation() throws Exception {
        MemorySegment s = gpu.foreignStream(context);
        MemorySegment out = arena.allocate(8);
        check(api.cuStreamBeginCapture_v2(s, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
        check(api.cuStreamEndCapture(s, out));
        MemorySegment graph = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        check(api.cuGraphInstantiateWithFlags(out, graph, 0));
        MemorySegment exec = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        Object[] launch = {exec, s};
        Thread other = new Thread(() -> gpu.hostCallBegins("cuGraphLaunch", launch), "launcher");
        other.start();
        other.join(10_000);
        check(api.cuGraphExecUpdate_v2(exec, graph, MemorySegment.NULL));
        assertEquals(1, gpu.violations().size(), gpu.violations().toString());
        assertTrue(gpu.violations().get(0).startsWith("cuGraphExecUpdate_v2 of graph executable"), gpu.violations().get(0));
        check(api.cuGraphLaunch(exec, s)); // launches from two threads are not flagged
        assertEquals(1, gpu.violations().size());
    }
}
