package dev.gatun.cuda.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The floor under Gatun's short calls (issue 11): the same driver calls as
 * {@code MemoryBenchmark.allocateInStreamOrderAndClose} and {@code LaunchBenchmark.recordAndQueryEvent},
 * made as bare FFM downcalls with no owner, no checked layer and no bookkeeping, from the same JVM
 * in the same JMH run. Against the C twin this is what the Java-to-C transition itself costs;
 * against Gatun's rows it is what Gatun's own work costs (for an allocation: the owner object,
 * its Cleaner registration, the close's retirement decision and the counters).
 *
 * <p>This is a measuring stick, not library code: it makes its own downcall handles (the same
 * default linker options as Gatun's {@code Downcalls}) on its own primary-context retain, and
 * checks each result only by throwing when it is not CUDA_SUCCESS, as a C loop would.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class RawDowncallBenchmark {

    private static final long BYTES = TwinRow.ALLOCATION_BYTES;
    private static final int DISABLE_TIMING = 2; // CU_EVENT_DISABLE_TIMING
    private static final int NOT_READY = 600; // CUDA_ERROR_NOT_READY

    /** Device 0's primary context made current, one stream and one event, all through raw calls. */
    @State(Scope.Thread)
    public static class Driver {
        MethodHandle memAllocAsync;
        MethodHandle memFreeAsync;
        MethodHandle eventRecord;
        MethodHandle eventQuery;
        MethodHandle streamSynchronize;
        MemorySegment out;
        MemorySegment stream;
        MemorySegment event;
        private MethodHandle streamDestroy;
        private MethodHandle eventDestroy;
        private MethodHandle primaryCtxRelease;

        @Setup
        public void open() throws Throwable {
            Arena arena = Arena.global();
            SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", arena);
            Linker linker = Linker.nativeLinker();
            var A = ValueLayout.ADDRESS;
            var I = ValueLayout.JAVA_INT;
            var L = ValueLayout.JAVA_LONG;
            MethodHandle init = handle(cuda, linker, "cuInit", FunctionDescriptor.of(I, I));
            MethodHandle retain = handle(cuda, linker, "cuDevicePrimaryCtxRetain", FunctionDescriptor.of(I, A, I));
            MethodHandle setCurrent = handle(cuda, linker, "cuCtxSetCurrent", FunctionDescriptor.of(I, A));
            MethodHandle streamCreate = handle(cuda, linker, "cuStreamCreate", FunctionDescriptor.of(I, A, I));
            MethodHandle eventCreate = handle(cuda, linker, "cuEventCreate", FunctionDescriptor.of(I, A, I));
            memAllocAsync = handle(cuda, linker, "cuMemAllocAsync", FunctionDescriptor.of(I, A, L, A));
            memFreeAsync = handle(cuda, linker, "cuMemFreeAsync", FunctionDescriptor.of(I, L, A));
            eventRecord = handle(cuda, linker, "cuEventRecord", FunctionDescriptor.of(I, A, A));
            eventQuery = handle(cuda, linker, "cuEventQuery", FunctionDescriptor.of(I, A));
            streamSynchronize = handle(cuda, linker, "cuStreamSynchronize", FunctionDescriptor.of(I, A));
            streamDestroy = handle(cuda, linker, "cuStreamDestroy_v2", FunctionDescriptor.of(I, A));
            eventDestroy = handle(cuda, linker, "cuEventDestroy_v2", FunctionDescriptor.of(I, A));
            primaryCtxRelease = handle(cuda, linker, "cuDevicePrimaryCtxRelease_v2", FunctionDescriptor.of(I, I));
            out = arena.allocate(8, 8);
            // Safety (all setup calls): out is 8 bytes for the one handle each call writes; the
            // handles passed back are the ones the driver wrote.
            check((int) init.invokeExact(0), "cuInit");
            check((int) retain.invokeExact(out, 0), "cuDevicePrimaryCtxRetain");
            MemorySegment context = MemorySegment.ofAddress(out.get(L, 0));
            check((int) setCurrent.invokeExact(context), "cuCtxSetCurrent");
            check((int) streamCreate.invokeExact(out, 1), "cuStreamCreate"); // CU_STREAM_NON_BLOCKING, as Gatun's streams
            stream = MemorySegment.ofAddress(out.get(L, 0));
            check((int) eventCreate.invokeExact(out, DISABLE_TIMING), "cuEventCreate");
            event = MemorySegment.ofAddress(out.get(L, 0));
        }

        @TearDown(Level.Iteration)
        public void drain() throws Throwable {
            check((int) streamSynchronize.invokeExact(stream), "cuStreamSynchronize");
        }

        @TearDown
        public void close() throws Throwable {
            check((int) streamSynchronize.invokeExact(stream), "cuStreamSynchronize");
            check((int) eventDestroy.invokeExact(event), "cuEventDestroy");
            check((int) streamDestroy.invokeExact(stream), "cuStreamDestroy");
            check((int) primaryCtxRelease.invokeExact(0), "cuDevicePrimaryCtxRelease");
        }

        private static MethodHandle handle(SymbolLookup cuda, Linker linker, String name, FunctionDescriptor descriptor) {
            return linker.downcallHandle(cuda.findOrThrow(name), descriptor);
        }
    }

    static void check(int result, String call) {
        if (result != 0) {
            throw new IllegalStateException(call + " returned CUresult " + result);
        }
    }

    /** cuMemAllocAsync + cuMemFreeAsync of 1 MiB on one stream: the driver calls of a stream-ordered allocate + close. */
    @Benchmark
    public long streamOrderedAllocateAndFree(Driver d) throws Throwable {
        // Safety: out is 8 bytes for the CUdeviceptr; the stream is open until tear-down; the
        // free names the address just allocated, on the stream that allocated it.
        check((int) d.memAllocAsync.invokeExact(d.out, BYTES, d.stream), "cuMemAllocAsync");
        long address = d.out.get(ValueLayout.JAVA_LONG, 0);
        check((int) d.memFreeAsync.invokeExact(address, d.stream), "cuMemFreeAsync");
        return address;
    }

    /** cuEventRecord + cuEventQuery: the driver calls of an event record + query. */
    @Benchmark
    public int recordAndQueryEvent(Driver d) throws Throwable {
        // Safety: the event and stream live until tear-down.
        check((int) d.eventRecord.invokeExact(d.event, d.stream), "cuEventRecord");
        int r = (int) d.eventQuery.invokeExact(d.event);
        if (r != 0 && r != NOT_READY) {
            check(r, "cuEventQuery");
        }
        return r;
    }
}
