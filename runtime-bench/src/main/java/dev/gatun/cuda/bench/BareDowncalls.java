package dev.gatun.cuda.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The driver calls of the floor rows as bare FFM downcalls: no owner, no checked layer, no
 * bookkeeping, made the way a careful hand-written binding makes them, so that they measure the
 * Java-to-C transition and nothing else. The handles are {@code static final} (the JIT treats
 * them as constants and links each call straight to its native stub; a handle in a plain field
 * is called through its lambda form), the out-parameter is allocated once for the process in the
 * global arena (a segment of a shared or automatic arena would be acquired and released around
 * every downcall that takes it), and every result is checked as a C loop would check it. Used by {@link BareTwin} (the floor in
 * {@code compare}) and {@link RawDowncallBenchmark} (the same under JMH); {@link BareGemm} takes
 * its session and the set-up calls of its operands from here ({@link #allocate}, {@link #fill16},
 * {@link #copyToHost}, {@link #free}: outside its timed loop, as in twins.c).
 *
 * <p>Loaded only where a driver is: the class's initialization looks up {@code libcuda.so.1}.
 */
final class BareDowncalls {

    static final long BYTES = TwinRow.ALLOCATION_BYTES;
    private static final int DISABLE_TIMING = 2; // CU_EVENT_DISABLE_TIMING
    private static final int NON_BLOCKING = 1; // CU_STREAM_NON_BLOCKING, as Gatun's streams
    private static final int NOT_READY = 600; // CUDA_ERROR_NOT_READY

    private static final ValueLayout A = ValueLayout.ADDRESS;
    private static final ValueLayout I = ValueLayout.JAVA_INT;
    private static final ValueLayout L = ValueLayout.JAVA_LONG;
    private static final SymbolLookup CUDA = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
    /**
     * {@code -Dgatun.bench.bareCritical=true}: the four timed calls (event record and query,
     * stream-ordered allocate and free) are linked with {@link Linker.Option#critical}, which
     * leaves out the thread-state transitions around the call (an experiment on the floor: how
     * much of bare FFM's distance to C those transitions are). Off by default: Gatun links none
     * of its calls this way.
     */
    static final boolean CRITICAL = Boolean.getBoolean("gatun.bench.bareCritical");
    /**
     * {@code -Dgatun.bench.bareWords=true}: the four timed calls take their pointers and handles as
     * 64-bit words ({@code JAVA_LONG} where C has a pointer), not as {@link MemorySegment}s, so that
     * no downcall checks a segment and reads its address (an experiment on the floor, as
     * {@link #CRITICAL}; the two combine). Off by default: Gatun passes segments.
     */
    static final boolean WORDS = Boolean.getBoolean("gatun.bench.bareWords");
    /**
     * {@code -Dgatun.bench.bareVia=step|loop}: the event and stream-ordered rows' operations made by
     * twins.c on this session's stream and event ({@link ViaC}): {@code step}, one downcall per
     * operation into twins.c, which calls the driver; {@code loop}, one downcall per {@code n}
     * operations, twins.c's own loop. Unset ({@code java}): every driver call a downcall from the
     * Java loop. An experiment on the floor, as {@link #CRITICAL}: it tells whether the in-process
     * gap to C is the Java-to-C call, the Java loop around it, or the handles.
     */
    static final String VIA = System.getProperty("gatun.bench.bareVia", "java");

    private static final MethodHandle INIT = handle("cuInit", FunctionDescriptor.of(I, I));
    private static final MethodHandle RETAIN = handle("cuDevicePrimaryCtxRetain", FunctionDescriptor.of(I, A, I));
    private static final MethodHandle RELEASE = handle("cuDevicePrimaryCtxRelease_v2", FunctionDescriptor.of(I, I));
    private static final MethodHandle SET_CURRENT = handle("cuCtxSetCurrent", FunctionDescriptor.of(I, A));
    private static final MethodHandle STREAM_CREATE = handle("cuStreamCreate", FunctionDescriptor.of(I, A, I));
    private static final MethodHandle STREAM_DESTROY = handle("cuStreamDestroy_v2", FunctionDescriptor.of(I, A));
    private static final MethodHandle STREAM_SYNCHRONIZE = handle("cuStreamSynchronize", FunctionDescriptor.of(I, A));
    private static final MethodHandle EVENT_CREATE = handle("cuEventCreate", FunctionDescriptor.of(I, A, I));
    private static final MethodHandle EVENT_DESTROY = handle("cuEventDestroy_v2", FunctionDescriptor.of(I, A));
    private static final MethodHandle EVENT_RECORD = timedHandle("cuEventRecord", FunctionDescriptor.of(I, A, A));
    private static final MethodHandle EVENT_QUERY = timedHandle("cuEventQuery", FunctionDescriptor.of(I, A));
    private static final MethodHandle MEM_ALLOC_ASYNC = timedHandle("cuMemAllocAsync", FunctionDescriptor.of(I, A, L, A));
    private static final MethodHandle MEM_FREE_ASYNC = timedHandle("cuMemFreeAsync", FunctionDescriptor.of(I, L, A));
    private static final MethodHandle EVENT_RECORD_WORDS = timedHandle("cuEventRecord", FunctionDescriptor.of(I, L, L));
    private static final MethodHandle EVENT_QUERY_WORDS = timedHandle("cuEventQuery", FunctionDescriptor.of(I, L));
    private static final MethodHandle MEM_ALLOC_ASYNC_WORDS = timedHandle("cuMemAllocAsync", FunctionDescriptor.of(I, L, L, L));
    private static final MethodHandle MEM_FREE_ASYNC_WORDS = timedHandle("cuMemFreeAsync", FunctionDescriptor.of(I, L, L));
    private static final MethodHandle MEM_ALLOC = handle("cuMemAlloc_v2", FunctionDescriptor.of(I, A, L));
    private static final MethodHandle MEM_FREE = handle("cuMemFree_v2", FunctionDescriptor.of(I, L));
    private static final MethodHandle MEMSET_D16_ASYNC = handle("cuMemsetD16Async",
            FunctionDescriptor.of(I, L, ValueLayout.JAVA_SHORT, L, A));
    private static final MethodHandle MEMCPY_DTOH = handle("cuMemcpyDtoH_v2", FunctionDescriptor.of(I, A, L, L));
    /** The out-parameter of every call here, one thread at a time (the twins and JMH's one thread). */
    private static final MemorySegment OUT = Arena.global().allocate(8, 8);
    /** {@link #OUT}'s address, for the calls of {@link #WORDS}. */
    private static final long OUT_WORD = OUT.address();

    private BareDowncalls() {
    }

    /**
     * Device 0's primary context made current on the opening thread, one non-blocking stream and
     * one event without timing, all through bare calls (a record: its fields are final and
     * trusted, so a compiled loop reads them once); the words are the two handles' addresses, for
     * the calls of {@link #WORDS}.
     */
    record Session(MemorySegment stream, MemorySegment event, long streamWord, long eventWord) implements AutoCloseable {

        static Session open() {
            MemorySegment out = OUT;
            try {
                // Safety (every set-up call): out is 8 bytes for the one handle each call writes,
                // and the handles passed back are the ones the driver wrote.
                check((int) INIT.invokeExact(0), "cuInit");
                check((int) RETAIN.invokeExact(out, 0), "cuDevicePrimaryCtxRetain");
                check((int) SET_CURRENT.invokeExact(MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0))),
                        "cuCtxSetCurrent");
                check((int) STREAM_CREATE.invokeExact(out, NON_BLOCKING), "cuStreamCreate");
                MemorySegment stream = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
                check((int) EVENT_CREATE.invokeExact(out, DISABLE_TIMING), "cuEventCreate");
                MemorySegment event = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
                return new Session(stream, event, stream.address(), event.address());
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }

        /** Waits for everything queued on the stream. */
        void drain() {
            try {
                check((int) STREAM_SYNCHRONIZE.invokeExact(stream), "cuStreamSynchronize");
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }

        @Override
        public void close() {
            try {
                // Safety: the stream and event are this session's, destroyed once, after the drain.
                drain();
                check((int) EVENT_DESTROY.invokeExact(event), "cuEventDestroy");
                check((int) STREAM_DESTROY.invokeExact(stream), "cuStreamDestroy");
                check((int) RELEASE.invokeExact(0), "cuDevicePrimaryCtxRelease");
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
    }

    /**
     * twins.c's entries of {@link #VIA}, in the library that {@link SameProcess} names in
     * {@code gatun.bench.twinsLibrary} (the C twin's own): loaded on first use, so only the runs of
     * {@code bareVia} need it.
     */
    static final class ViaC {
        private static final SymbolLookup TWINS = SymbolLookup.libraryLookup(
                java.nio.file.Path.of(System.getProperty(SameProcess.LIBRARY_PROPERTY)), Arena.global());
        private static final MethodHandle RECORD_QUERY_STEP = twin("gatun_twin_record_query_step", FunctionDescriptor.of(I, A, A));
        private static final MethodHandle RECORD_QUERY_LOOP = twin("gatun_twin_record_query_loop", FunctionDescriptor.of(I, A, A, L));
        private static final MethodHandle ALLOC_FREE_STEP = twin("gatun_twin_alloc_free_step", FunctionDescriptor.of(I, A));
        private static final MethodHandle ALLOC_FREE_LOOP = twin("gatun_twin_alloc_free_loop", FunctionDescriptor.of(I, A, L));

        private ViaC() {
        }

        /** {@code n} operations of the event row ({@code allocate} false) or the stream-ordered row, made by twins.c. */
        static void run(boolean allocate, Session s, int n) throws Throwable {
            // Safety: the stream and event live until the session closes; twins.c's entries keep
            // neither, and each frees what it allocates on the stream that allocated it.
            if (VIA.equals("loop")) {
                check(allocate ? (int) ALLOC_FREE_LOOP.invokeExact(s.stream(), (long) n)
                        : (int) RECORD_QUERY_LOOP.invokeExact(s.event(), s.stream(), (long) n), "twins.c's loop");
                return;
            }
            for (int i = 0; i < n; i++) {
                check(allocate ? (int) ALLOC_FREE_STEP.invokeExact(s.stream())
                        : (int) RECORD_QUERY_STEP.invokeExact(s.event(), s.stream()), "twins.c's step");
            }
        }

        private static MethodHandle twin(String name, FunctionDescriptor descriptor) {
            return Linker.nativeLinker().downcallHandle(TWINS.findOrThrow(name), descriptor);
        }
    }

    /** cuMemAllocAsync + cuMemFreeAsync of 1 MiB on the session's stream: a stream-ordered allocate + close. */
    static long allocateAndFree(Session s) throws Throwable {
        // Safety: out is 8 bytes for the CUdeviceptr (OUT_WORD under WORDS: the same memory, the
        // global arena's, never freed); the stream is open until the session closes; the free
        // names the address just allocated, on the stream that allocated it.
        if (WORDS) {
            check((int) MEM_ALLOC_ASYNC_WORDS.invokeExact(OUT_WORD, BYTES, s.streamWord()), "cuMemAllocAsync");
            long address = OUT.get(ValueLayout.JAVA_LONG, 0);
            check((int) MEM_FREE_ASYNC_WORDS.invokeExact(address, s.streamWord()), "cuMemFreeAsync");
            return address;
        }
        check((int) MEM_ALLOC_ASYNC.invokeExact(OUT, BYTES, s.stream()), "cuMemAllocAsync");
        long address = OUT.get(ValueLayout.JAVA_LONG, 0);
        check((int) MEM_FREE_ASYNC.invokeExact(address, s.stream()), "cuMemFreeAsync");
        return address;
    }

    /** cuEventRecord + cuEventQuery on the session's stream and event: an event record + query. */
    static int recordAndQuery(Session s) throws Throwable {
        // Safety: the event and stream live until the session closes.
        int r;
        if (WORDS) {
            check((int) EVENT_RECORD_WORDS.invokeExact(s.eventWord(), s.streamWord()), "cuEventRecord");
            r = (int) EVENT_QUERY_WORDS.invokeExact(s.eventWord());
        } else {
            check((int) EVENT_RECORD.invokeExact(s.event(), s.stream()), "cuEventRecord");
            r = (int) EVENT_QUERY.invokeExact(s.event());
        }
        if (r != 0 && r != NOT_READY) {
            check(r, "cuEventQuery");
        }
        return r;
    }

    /** cuMemAlloc of {@code bytes}: the device address. */
    static long allocate(long bytes) throws Throwable {
        // Safety: out is 8 bytes for the CUdeviceptr the driver writes.
        check((int) MEM_ALLOC.invokeExact(OUT, bytes), "cuMemAlloc");
        return OUT.get(ValueLayout.JAVA_LONG, 0);
    }

    /** cuMemFree of an address {@link #allocate} returned, once, after the work that used it drained. */
    static void free(long address) throws Throwable {
        check((int) MEM_FREE.invokeExact(address), "cuMemFree");
    }

    /** cuMemsetD16Async: {@code count} 16-bit words at {@code address} set to {@code value}, on {@code s}'s stream. */
    static void fill16(Session s, long address, short value, long count) throws Throwable {
        // Safety: the caller allocated count 16-bit words at address; the stream is open.
        check((int) MEMSET_D16_ASYNC.invokeExact(address, value, count, s.stream()), "cuMemsetD16Async");
    }

    /** cuMemcpyDtoH of {@code host.byteSize()} bytes from {@code address} (synchronous; drain the stream that wrote them first). */
    static void copyToHost(MemorySegment host, long address) throws Throwable {
        // Safety: host is a live native segment of exactly the bytes copied; the caller allocated
        // at least that many at address.
        check((int) MEMCPY_DTOH.invokeExact(host, address, host.byteSize()), "cuMemcpyDtoH");
    }

    static void check(int result, String call) {
        if (result != 0) {
            throw new IllegalStateException(call + " returned CUresult " + result);
        }
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return Linker.nativeLinker().downcallHandle(CUDA.findOrThrow(name), descriptor);
    }

    /** A timed call's handle: critical under {@link #CRITICAL} (none of these calls blocks nor calls back into Java). */
    private static MethodHandle timedHandle(String name, FunctionDescriptor descriptor) {
        return CRITICAL ? Linker.nativeLinker().downcallHandle(CUDA.findOrThrow(name), descriptor,
                Linker.Option.critical(false)) : handle(name, descriptor);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
