package dev.gatun.cuda.bench;

import dev.gatun.cuda.bindings.driver.CUmemLocation_st;
import dev.gatun.cuda.bindings.driver.CUmemPoolProps_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

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
     * {@code -Dgatun.bench.bareCritical=true}: the timed calls (event record and query, and the
     * allocate and free of the three allocation rows) are linked with {@link Linker.Option#critical}, which
     * leaves out the thread-state transitions around the call (an experiment on the floor: how
     * much of bare FFM's distance to C those transitions are). Off by default: Gatun links none
     * of its calls this way.
     */
    static final boolean CRITICAL = Boolean.getBoolean("gatun.bench.bareCritical");
    /**
     * {@code -Dgatun.bench.bareWords=true}: the event and stream-ordered rows' four timed calls
     * take their pointers and handles as 64-bit words ({@code JAVA_LONG} where C has a pointer),
     * not as {@link MemorySegment}s, so that
     * no downcall checks a segment and reads its address (an experiment on the floor, as
     * {@link #CRITICAL}; the two combine). Off by default: Gatun passes segments.
     */
    static final boolean WORDS = Boolean.getBoolean("gatun.bench.bareWords");

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
    private static final MethodHandle MEM_ALLOC_FROM_POOL_ASYNC = timedHandle("cuMemAllocFromPoolAsync",
            FunctionDescriptor.of(I, A, L, A, A));
    /** Timed in the pool-off row; also the set-up's and BareGemm's allocations. */
    private static final MethodHandle MEM_ALLOC = timedHandle("cuMemAlloc_v2", FunctionDescriptor.of(I, A, L));
    private static final MethodHandle MEM_FREE = timedHandle("cuMemFree_v2", FunctionDescriptor.of(I, L));
    private static final MethodHandle MEM_POOL_CREATE = handle("cuMemPoolCreate", FunctionDescriptor.of(I, A, A));
    private static final MethodHandle MEM_POOL_SET_ATTRIBUTE = handle("cuMemPoolSetAttribute", FunctionDescriptor.of(I, A, I, A));
    private static final MethodHandle MEM_POOL_DESTROY = handle("cuMemPoolDestroy", FunctionDescriptor.of(I, A));
    private static final MethodHandle MEMSET_D16_ASYNC = handle("cuMemsetD16Async",
            FunctionDescriptor.of(I, L, ValueLayout.JAVA_SHORT, L, A));
    private static final MethodHandle MEMCPY_DTOH = handle("cuMemcpyDtoH_v2", FunctionDescriptor.of(I, A, L, L));
    private static final MethodHandle MEMSET_D32_ASYNC = handle("cuMemsetD32Async", FunctionDescriptor.of(I, L, I, L, A));
    private static final MethodHandle MODULE_LOAD_DATA = handle("cuModuleLoadData", FunctionDescriptor.of(I, A, A));
    private static final MethodHandle MODULE_GET_FUNCTION = handle("cuModuleGetFunction", FunctionDescriptor.of(I, A, A, A));
    private static final MethodHandle MODULE_UNLOAD = handle("cuModuleUnload", FunctionDescriptor.of(I, A));
    /** twins.c's NAN_BITS and ONE_BITS: the 4-argument kernel's out poisoned, its in all 1.0f. */
    private static final int NAN_BITS = 0x7fc00000;
    private static final int ONE_BITS = Float.floatToRawIntBits(1f);
    private static final long FOUR_BYTES = 4L * TwinRow.FOUR_ELEMENTS;
    /** The out-parameter of every call here, one thread at a time (the twins and JMH's one thread). */
    private static final MemorySegment OUT = Arena.global().allocate(8, 8);
    /** {@link #OUT}'s address, for the calls of {@link #WORDS}. */
    private static final long OUT_WORD = OUT.address();

    private BareDowncalls() {
    }

    /**
     * Device 0's primary context made current on the opening thread, one non-blocking stream and
     * what the row sets up for itself, as twins.c's {@code set_up} of the row: an event without
     * timing for the event row, a memory pool that keeps what is freed for the created-pool row
     * (NULL otherwise); all through bare calls (a record: its fields are final and trusted, so a
     * compiled loop reads them once). The words are the stream's and event's addresses, for the
     * calls of {@link #WORDS}. With {@link #openAsTwins}, also what twins.c's run_row sets up for
     * every row ({@code module}, {@code in}, {@code out}); with {@link #open}, those are NULL and 0.
     */
    record Session(MemorySegment stream, MemorySegment event, MemorySegment pool, long streamWord, long eventWord,
            MemorySegment module, long in, long out) implements AutoCloseable {

        /**
         * The primary context, a stream and the row's own set-up: nothing else
         * (RawDowncallBenchmark's, with the event row's event, and {@link BareTwin#MINIMAL_SET_UP}'s).
         */
        static Session open(TwinRow row) {
            MemorySegment stream = MemorySegment.NULL;
            try {
                stream = openStream();
                return withRowSetUp(row, stream, MemorySegment.NULL, 0, 0);
            } catch (Throwable t) {
                throw undone(t, partial(stream, MemorySegment.NULL, 0, 0));
            }
        }

        /**
         * twins.c's run_row set-up for {@code row}, call for call, so that the bare loop meets the
         * stream the C twin's loop meets: the primary context, a non-blocking stream, the module of
         * {@code ptx} (NUL-terminated PTX text) and its two kernels looked up, the 4-argument
         * kernel's in and out allocated and filled on the stream, then the row's own set-up, then a
         * synchronize. Why: on the event row, twins.c's own loop on the handles of a session with
         * only a stream and an event ran some 26 ns an operation slower than on its own (call 32,
         * bad1fb4).
         */
        static Session openAsTwins(MemorySegment ptx, TwinRow row) {
            MemorySegment stream = MemorySegment.NULL;
            MemorySegment module = MemorySegment.NULL;
            long in = 0;
            long out = 0;
            Session made = null;
            try {
                stream = openStream();
                // Safety: ptx is NUL-terminated text alive for the call; the module handle is the
                // one the driver wrote; each name is a NUL-terminated string in a confined arena
                // alive for its call; in and out are FOUR_BYTES each, filled as 32-bit words.
                check((int) MODULE_LOAD_DATA.invokeExact(OUT, ptx), "cuModuleLoadData");
                module = MemorySegment.ofAddress(OUT.get(ValueLayout.JAVA_LONG, 0));
                try (Arena names = Arena.ofConfined()) {
                    for (String kernel : new String[] {"empty", "four"}) {
                        check((int) MODULE_GET_FUNCTION.invokeExact(OUT, module, names.allocateFrom(kernel)),
                                "cuModuleGetFunction");
                    }
                }
                in = allocate(FOUR_BYTES);
                out = allocate(FOUR_BYTES);
                check((int) MEMSET_D32_ASYNC.invokeExact(in, ONE_BITS, (long) TwinRow.FOUR_ELEMENTS, stream),
                        "cuMemsetD32Async");
                check((int) MEMSET_D32_ASYNC.invokeExact(out, NAN_BITS, (long) TwinRow.FOUR_ELEMENTS, stream),
                        "cuMemsetD32Async");
                made = withRowSetUp(row, stream, module, in, out);
                made.drain();
                return made;
            } catch (Throwable t) {
                throw undone(t, made != null ? made : partial(stream, module, in, out));
            }
        }

        /** The session with the row's own set-up made on {@code stream}: its event, its pool, or nothing. */
        private static Session withRowSetUp(TwinRow row, MemorySegment stream, MemorySegment module, long in, long out)
                throws Throwable {
            MemorySegment event = MemorySegment.NULL;
            MemorySegment pool = MemorySegment.NULL;
            if (row == TwinRow.EVENT_RECORD_QUERY) {
                check((int) EVENT_CREATE.invokeExact(OUT, DISABLE_TIMING), "cuEventCreate");
                event = MemorySegment.ofAddress(OUT.get(ValueLayout.JAVA_LONG, 0));
            } else if (row == TwinRow.ALLOC_FROM_POOL) {
                pool = createPool();
            }
            return new Session(stream, event, pool, stream.address(), event.address(), module, in, out);
        }

        /**
         * twins.c's set_up_pool: a pool of device 0's pinned device memory whose release threshold
         * keeps all of it. Destroyed here (with what came before) when its attribute is refused.
         */
        private static MemorySegment createPool() throws Throwable {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment props = CUmemPoolProps_st.allocate(arena); // zeroed, as twins.c's {0}
                CUmemPoolProps_st.allocType(props, CudaDriver.CU_MEM_ALLOCATION_TYPE_PINNED());
                MemorySegment location = CUmemPoolProps_st.location(props);
                CUmemLocation_st.type(location, CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE());
                CUmemLocation_st.id(location, 0);
                // Safety: props is a whole CUmemPoolProps; OUT takes the pool's handle; the
                // threshold is the 8-byte cuuint64_t the attribute takes.
                check((int) MEM_POOL_CREATE.invokeExact(OUT, props), "cuMemPoolCreate");
                MemorySegment pool = MemorySegment.ofAddress(OUT.get(ValueLayout.JAVA_LONG, 0));
                try {
                    check((int) MEM_POOL_SET_ATTRIBUTE.invokeExact(pool, CudaDriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD(),
                            arena.allocateFrom(ValueLayout.JAVA_LONG, -1L)), "cuMemPoolSetAttribute");
                } catch (Throwable t) {
                    // Safety: the pool was made just now and nothing was allocated from it.
                    check((int) MEM_POOL_DESTROY.invokeExact(pool), "cuMemPoolDestroy");
                    throw t;
                }
                return pool;
            }
        }

        /** The primary context made current, and a non-blocking stream on it. */
        private static MemorySegment openStream() throws Throwable {
            // Safety (every set-up call): OUT is 8 bytes for the one handle each call writes,
            // and the handles passed back are the ones the driver wrote.
            check((int) INIT.invokeExact(0), "cuInit");
            check((int) RETAIN.invokeExact(OUT, 0), "cuDevicePrimaryCtxRetain");
            check((int) SET_CURRENT.invokeExact(MemorySegment.ofAddress(OUT.get(ValueLayout.JAVA_LONG, 0))),
                    "cuCtxSetCurrent");
            check((int) STREAM_CREATE.invokeExact(OUT, NON_BLOCKING), "cuStreamCreate");
            return MemorySegment.ofAddress(OUT.get(ValueLayout.JAVA_LONG, 0));
        }

        /** What a set-up made before the row's own set-up: closed as a session, it undoes them. */
        private static Session partial(MemorySegment stream, MemorySegment module, long in, long out) {
            return new Session(stream, MemorySegment.NULL, MemorySegment.NULL, 0, 0, module, in, out);
        }

        /**
         * {@code t} to throw, after {@code made} (what the set-up made before it failed) is undone
         * as close does, so that no run leaks into the next; nothing is undone when no stream was made.
         */
        private static RuntimeException undone(Throwable t, Session made) {
            if (t instanceof Error e) {
                throw e;
            }
            RuntimeException failure = t instanceof RuntimeException r ? r : new IllegalStateException(t);
            if (!made.stream().equals(MemorySegment.NULL)) {
                try {
                    made.close();
                } catch (RuntimeException closing) {
                    failure.addSuppressed(closing);
                }
            }
            return failure;
        }

        /** Waits for everything queued on the stream. */
        void drain() {
            try {
                check((int) STREAM_SYNCHRONIZE.invokeExact(stream), "cuStreamSynchronize");
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }

        /** As twins.c's run_row tears down: the event, the pool after a drain, a drain, the buffers, the module, the stream, the context. */
        @Override
        public void close() {
            try {
                // Safety: every handle is this session's (NULL or 0: not made), destroyed once; the
                // pool, buffers and module after a drain, so no queued free or launch still uses them.
                if (!event.equals(MemorySegment.NULL)) {
                    check((int) EVENT_DESTROY.invokeExact(event), "cuEventDestroy");
                }
                drain();
                if (!pool.equals(MemorySegment.NULL)) {
                    check((int) MEM_POOL_DESTROY.invokeExact(pool), "cuMemPoolDestroy");
                }
                for (long buffer : new long[] {in, out}) {
                    if (buffer != 0) {
                        free(buffer);
                    }
                }
                if (!module.equals(MemorySegment.NULL)) {
                    check((int) MODULE_UNLOAD.invokeExact(module), "cuModuleUnload");
                }
                check((int) STREAM_DESTROY.invokeExact(stream), "cuStreamDestroy");
                check((int) RELEASE.invokeExact(0), "cuDevicePrimaryCtxRelease");
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
    }

    /**
     * twins.c's entries of {@link BareTwin#VIA}, in the library that {@link SameProcess} names in
     * {@code gatun.bench.twinsLibrary} (the C twin's own): loaded on first use, so only the runs of
     * {@code bareVia} need it.
     */
    static final class ViaC {
        private static final SymbolLookup TWINS = SymbolLookup.libraryLookup(
                Path.of(System.getProperty(SameProcess.LIBRARY_PROPERTY)), Arena.global());
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
            if (BareTwin.VIA == BareTwin.Via.LOOP) {
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

    /** cuMemAllocFromPoolAsync from the session's pool + cuMemFreeAsync of 1 MiB on its stream: the created-pool row's operation. */
    static long allocateFromPoolAndFree(Session s) throws Throwable {
        // Safety: OUT is 8 bytes for the CUdeviceptr; the pool and stream are open until the
        // session closes; the free names the address just allocated, on the stream that allocated it.
        check((int) MEM_ALLOC_FROM_POOL_ASYNC.invokeExact(OUT, BYTES, s.pool(), s.stream()), "cuMemAllocFromPoolAsync");
        long address = OUT.get(ValueLayout.JAVA_LONG, 0);
        check((int) MEM_FREE_ASYNC.invokeExact(address, s.stream()), "cuMemFreeAsync");
        return address;
    }

    /** cuMemAlloc + cuMemFree of 1 MiB: the pool-off row's operation (its context is current: the session made it so). */
    static long allocateAndFreeUnpooled() throws Throwable {
        long address = allocate(BYTES);
        free(address);
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

    /**
     * A timed call's handle: critical under {@link #CRITICAL}. None of these calls calls back into
     * Java; {@code cuMemFree} may wait for the device, which a critical call only makes the JVM's
     * safepoints wait for too (an experiment's cost, not a hazard).
     */
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
