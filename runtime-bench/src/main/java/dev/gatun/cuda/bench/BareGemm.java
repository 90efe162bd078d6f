package dev.gatun.cuda.bench;

import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;
import dev.gatun.cuda.blas.internal.bindings.cublaslt.CublasLt;
import dev.gatun.cuda.blas.internal.bindings.cublaslt.cublasLtMatmulAlgo_t;
import dev.gatun.cuda.blas.internal.bindings.cublaslt.cublasLtMatmulHeuristicResult_t;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The floor under the GEMM rows ({@link TwinRow#GEMM_LT_64}, {@link TwinRow#GEMM_64}; issue 38):
 * the calls twins.c's {@code gemm_lt} and {@code gemm} rows make, as bare FFM downcalls from a
 * compiled Java loop, with no Gatun in between (neither its {@code Blas} owners nor its checked
 * calls; only the generated bindings' constants, prototypes and struct layouts, which are the
 * headers' own). Set-up outside the timed loop, as twins.c's {@code set_up_gemm_lt} /
 * {@code set_up_gemm}: device 0's primary context retained and made current and a non-blocking
 * stream ({@link BareDowncalls.Session}), A, B, D and the 32 MiB workspace with cuMemAlloc, A and
 * B set to fp16 1.0 and D poisoned with NaN, then for cuBLASLt its handle, the descriptor (fp32
 * compute and scale, no transposes, the default epilogue), three layouts and the heuristic's
 * first algorithm, asked once; for cuBLAS its handle bound to the stream, then to the workspace.
 * The timed loop calls only {@code cublasLtMatmul} or only {@code cublasGemmEx}, with alpha 1 and
 * beta 0 as host fp32 in global memory allocated once. Timed as both twins time the row: batches
 * of {@link TwinRow#BATCH} into a drained stream, the drain outside the timing, TOTAL_NS the sum
 * of the batches. After the run, one check that every element of D is 64.0
 * ({@link TwinWorkload#expectProduct(short[])}, as twins.c's {@code gemm_product_ok}), so that a
 * floor that did no GEMM fails loudly instead of looking fast.
 *
 * <p>cuBLASLt ({@value #LT_LIBRARY}), then cuBLAS ({@value #CUBLAS_LIBRARY}, which imports it),
 * are opened by name through the dynamic loader, once per process, when this class is first
 * used; where either does not open, {@link #measure} throws {@link TwinWorkload.LibraryMissing}
 * before any driver call, and {@link SameProcess} reports the row not run by this twin
 * ({@code SKIP bare}), as it does for the C twin.
 *
 * <p>Compiled before it is timed, as {@link BareTwin}'s rows: each row's loop is a method of its
 * own ({@link #matmulLoop}, {@link #gemmLoop}), called once per batch during the warm-up too, and
 * the first run of a row in a process warms at least {@value BareTwin#FIRST_WARM_UP} GEMMs. A
 * batch (64 calls) rather than {@link Twin#WARM_CHUNK} is the warm-up's chunk here because the
 * GEMM rows warm that way in both other twins (twins.c's and Twin's {@code time_batches}: a
 * drained stream before each batch, so that no warm-up GEMM waits for a full queue); 3,125 calls
 * of 64 iterations are far past HotSpot's thresholds for a standalone C2 compilation.
 */
final class BareGemm {

    static final String LT_LIBRARY = "libcublasLt.so.13";
    static final String CUBLAS_LIBRARY = "libcublas.so.13";

    private static final int SIZE = TwinRow.GEMM_SIZE;
    private static final long ELEMENTS = (long) SIZE * SIZE;
    /** twins.c's GEMM_WORKSPACE_BYTES, Gatun's default stream workspace. */
    private static final long WORKSPACE_BYTES = Blas.DEFAULT_WORKSPACE_BYTES;
    /** The heuristic's operands aligned to 16 bytes, as twins.c asks (cuMemAlloc aligns far more). */
    private static final int ALIGNMENT = 16;

    // The headers' constants, from the generated bindings (plain values: no library is opened for them).
    private static final int OP_N = Cublas.CUBLAS_OP_N();
    private static final int R_16F = Cublas.CUDA_R_16F();
    private static final int R_32F = Cublas.CUDA_R_32F();
    private static final int COMPUTE_32F = Cublas.CUBLAS_COMPUTE_32F();
    private static final int GEMM_DEFAULT = Cublas.CUBLAS_GEMM_DEFAULT();

    /** cuBLASLt and cuBLAS, or why not: opened by name once per process, never thrown from here. */
    private static final Libraries LIBRARIES = Libraries.open(LT_LIBRARY, CUBLAS_LIBRARY);

    /**
     * alpha 1 and beta 0, and the algorithm the heuristic chose (copied here as twins.c copies it
     * into {@code lt_algo}), in the global arena: a downcall checks nothing about a global
     * segment, where one of a confined or shared arena is checked or acquired around every call.
     * One session at a time, on one thread (the runner's).
     */
    private static final MemorySegment ALPHA = Arena.global().allocateFrom(ValueLayout.JAVA_FLOAT, 1f);
    private static final MemorySegment BETA = Arena.global().allocateFrom(ValueLayout.JAVA_FLOAT, 0f);
    private static final MemorySegment ALGO = Arena.global().allocate(cublasLtMatmulAlgo_t.layout());

    private static boolean matmulWarm;
    private static boolean gemmWarm;

    private BareGemm() {
    }

    /** What opening the two libraries found: both lookups, or the reason (then both lookups null). */
    record Libraries(SymbolLookup lt, SymbolLookup cublas, String missing) {

        /** Opens {@code lt}, then {@code cublas} (only when {@code lt} opened), by name; never throws. */
        static Libraries open(String lt, String cublas) {
            SymbolLookup ltLookup;
            try {
                ltLookup = SymbolLookup.libraryLookup(lt, Arena.global());
            } catch (IllegalArgumentException e) {
                return new Libraries(null, null, lt + " could not be opened by the dynamic loader (" + e.getMessage()
                        + "); " + cublas + ", which imports it, was not tried");
            }
            try {
                return new Libraries(ltLookup, SymbolLookup.libraryLookup(cublas, Arena.global()), null);
            } catch (IllegalArgumentException e) {
                return new Libraries(null, null, cublas + " could not be opened by the dynamic loader (" + e.getMessage()
                        + ")");
            }
        }
    }

    /**
     * The downcalls, linked when this holder is first used: only after {@link #measure} saw both
     * libraries open. {@code static final}, so the JIT links each call straight to its stub. The
     * prototypes are the generated bindings' (the headers'), so none is retyped here by hand.
     */
    private static final class Calls {
        static final MethodHandle LT_STATUS_NAME = lt("cublasLtGetStatusName", CublasLt.cublasLtGetStatusName$descriptor());
        static final MethodHandle LT_CREATE = lt("cublasLtCreate", CublasLt.cublasLtCreate$descriptor());
        static final MethodHandle LT_DESTROY = lt("cublasLtDestroy", CublasLt.cublasLtDestroy$descriptor());
        static final MethodHandle DESC_CREATE = lt("cublasLtMatmulDescCreate", CublasLt.cublasLtMatmulDescCreate$descriptor());
        static final MethodHandle DESC_DESTROY = lt("cublasLtMatmulDescDestroy",
                CublasLt.cublasLtMatmulDescDestroy$descriptor());
        static final MethodHandle DESC_SET = lt("cublasLtMatmulDescSetAttribute",
                CublasLt.cublasLtMatmulDescSetAttribute$descriptor());
        static final MethodHandle LAYOUT_CREATE = lt("cublasLtMatrixLayoutCreate",
                CublasLt.cublasLtMatrixLayoutCreate$descriptor());
        static final MethodHandle LAYOUT_DESTROY = lt("cublasLtMatrixLayoutDestroy",
                CublasLt.cublasLtMatrixLayoutDestroy$descriptor());
        static final MethodHandle PREFERENCE_CREATE = lt("cublasLtMatmulPreferenceCreate",
                CublasLt.cublasLtMatmulPreferenceCreate$descriptor());
        static final MethodHandle PREFERENCE_DESTROY = lt("cublasLtMatmulPreferenceDestroy",
                CublasLt.cublasLtMatmulPreferenceDestroy$descriptor());
        static final MethodHandle PREFERENCE_SET = lt("cublasLtMatmulPreferenceSetAttribute",
                CublasLt.cublasLtMatmulPreferenceSetAttribute$descriptor());
        static final MethodHandle HEURISTIC = lt("cublasLtMatmulAlgoGetHeuristic",
                CublasLt.cublasLtMatmulAlgoGetHeuristic$descriptor());
        static final MethodHandle MATMUL = lt("cublasLtMatmul", CublasLt.cublasLtMatmul$descriptor());
        static final MethodHandle CREATE = cublas("cublasCreate_v2", Cublas.cublasCreate_v2$descriptor());
        static final MethodHandle DESTROY = cublas("cublasDestroy_v2", Cublas.cublasDestroy_v2$descriptor());
        static final MethodHandle SET_STREAM = cublas("cublasSetStream_v2", Cublas.cublasSetStream_v2$descriptor());
        static final MethodHandle SET_WORKSPACE = cublas("cublasSetWorkspace_v2", Cublas.cublasSetWorkspace_v2$descriptor());
        static final MethodHandle GEMM_EX = cublas("cublasGemmEx", Cublas.cublasGemmEx$descriptor());

        private static MethodHandle lt(String name, FunctionDescriptor descriptor) {
            return Linker.nativeLinker().downcallHandle(LIBRARIES.lt().findOrThrow(name), descriptor);
        }

        private static MethodHandle cublas(String name, FunctionDescriptor descriptor) {
            return Linker.nativeLinker().downcallHandle(LIBRARIES.cublas().findOrThrow(name), descriptor);
        }
    }

    /** Whether {@code row} is one of the GEMM rows, which this class times. */
    static boolean covers(TwinRow row) {
        return row == TwinRow.GEMM_LT_64 || row == TwinRow.GEMM_64;
    }

    /** The name of the method whose compiled code times {@code row}'s GEMMs (a GEMM row). */
    static String loopName(TwinRow row) {
        return row == TwinRow.GEMM_LT_64 ? "matmulLoop" : "gemmLoop";
    }

    /**
     * The timed nanoseconds of {@code n} GEMMs of {@code row}, in batches of {@link TwinRow#BATCH}
     * (the sum of the batches' times), on a stream, operands and library handles of its own.
     *
     * @throws IllegalArgumentException when {@code row} is not a GEMM row, or {@code n} is not a
     *     positive multiple of {@link TwinRow#BATCH}
     * @throws TwinWorkload.LibraryMissing when cuBLASLt or cuBLAS cannot be opened (before any driver call)
     * @throws IllegalStateException when a call fails, or D is not the product afterwards
     */
    static long measure(TwinRow row, int n, MemorySegment ptx) throws Throwable {
        if (!covers(row) || n <= 0 || n % TwinRow.BATCH != 0) {
            throw new IllegalArgumentException(row.id() + " with N " + n + ": only " + TwinRow.GEMM_LT_64.id() + " and "
                    + TwinRow.GEMM_64.id() + " are GEMM rows, with N a positive multiple of " + TwinRow.BATCH);
        }
        if (LIBRARIES.missing() != null) {
            throw new TwinWorkload.LibraryMissing("cuBLAS missing: " + LIBRARIES.missing(), null);
        }
        boolean matmul = row == TwinRow.GEMM_LT_64;
        try (Session s = matmul ? Session.openMatmul(ptx) : Session.openGemm(ptx)) { // twins.c's set-up of the row
            boolean first = matmul ? !matmulWarm : !gemmWarm;
            int warmUp = Twin.operations(row, n) - n; // n/2 in whole batches, as both twins
            if (first) {
                warmUp = Math.max(warmUp, BareTwin.FIRST_WARM_UP / TwinRow.BATCH * TwinRow.BATCH);
            }
            for (int i = 0; i < warmUp; i += TwinRow.BATCH) {
                s.driver().drain();
                batch(matmul, s);
            }
            s.driver().drain();
            if (matmul) {
                matmulWarm = true;
            } else {
                gemmWarm = true;
            }
            long total = 0;
            for (int i = 0; i < n; i += TwinRow.BATCH) {
                s.driver().drain(); // outside the timing: the batch starts on an idle queue
                long start = System.nanoTime();
                batch(matmul, s);
                total += System.nanoTime() - start;
            }
            s.driver().drain();
            s.expectProduct();
            return total;
        }
    }

    private static void batch(boolean matmul, Session s) throws Throwable {
        if (matmul) {
            matmulLoop(s, TwinRow.BATCH);
        } else {
            gemmLoop(s, TwinRow.BATCH);
        }
    }

    /** The cuBLASLt row's loop: {@code n} calls of {@code cublasLtMatmul}, D = A B (D also C, beta 0). */
    static void matmulLoop(Session s, int n) throws Throwable {
        for (int i = 0; i < n; i++) {
            // Safety: every handle, descriptor and layout is the session's, alive until it closes;
            // A, B, D and the workspace are its cuMemAlloc'd buffers of the sizes the layouts and
            // WORKSPACE_BYTES name; alpha, beta and the algorithm are global memory that never moves.
            check((int) Calls.MATMUL.invokeExact(s.lt(), s.desc(), ALPHA, s.a(), s.layoutA(), s.b(), s.layoutB(), BETA,
                    s.d(), s.layoutD(), s.d(), s.layoutD(), ALGO, s.workspace(), WORKSPACE_BYTES,
                    s.driver().stream()), "cublasLtMatmul");
        }
    }

    /** The cuBLAS row's loop: {@code n} calls of {@code cublasGemmEx} (the handle bound to the stream and workspace once). */
    static void gemmLoop(Session s, int n) throws Throwable {
        for (int i = 0; i < n; i++) {
            // Safety: the handle is the session's, bound to its stream and workspace; A, B and D are
            // its buffers of SIZE x SIZE fp16, packed (leading dimension SIZE).
            check((int) Calls.GEMM_EX.invokeExact(s.cublas(), OP_N, OP_N, SIZE, SIZE, SIZE, ALPHA, s.a(), R_16F, SIZE,
                    s.b(), R_16F, SIZE, BETA, s.d(), R_16F, SIZE, COMPUTE_32F, GEMM_DEFAULT), "cublasGemmEx");
        }
    }

    /**
     * One run's objects (a record: final fields the compiled loop may read once): the driver
     * session, the operands and workspace, and the cuBLASLt objects (null for the cuBLAS row) or
     * the cuBLAS handle (null for the cuBLASLt row); {@code undo} destroys them, newest first.
     */
    record Session(BareDowncalls.Session driver, MemorySegment a, MemorySegment b, MemorySegment d,
            MemorySegment workspace, MemorySegment lt, MemorySegment desc, MemorySegment layoutA,
            MemorySegment layoutB, MemorySegment layoutD, MemorySegment cublas, Undo undo) implements AutoCloseable {

        /** twins.c's set_up_gemm_lt. */
        static Session openMatmul(MemorySegment ptx) {
            Undo undo = new Undo();
            try (Arena arena = Arena.ofConfined()) {
                Operands o = Operands.open(undo, ptx, TwinRow.GEMM_LT_64);
                MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
                // Safety (every set-up call): out holds the one handle each create writes; the
                // attribute values are segments of exactly the size passed; the handles passed
                // are the ones the library wrote, destroyed once, by undo, after the stream drained.
                check((int) Calls.LT_CREATE.invokeExact(out), "cublasLtCreate");
                MemorySegment lt = out.get(ValueLayout.ADDRESS, 0);
                undo.push(() -> check((int) Calls.LT_DESTROY.invokeExact(lt), "cublasLtDestroy"));
                check((int) Calls.DESC_CREATE.invokeExact(out, COMPUTE_32F, R_32F), "cublasLtMatmulDescCreate");
                MemorySegment desc = out.get(ValueLayout.ADDRESS, 0);
                undo.push(() -> check((int) Calls.DESC_DESTROY.invokeExact(desc), "cublasLtMatmulDescDestroy"));
                MemorySegment noTranspose = arena.allocateFrom(ValueLayout.JAVA_INT, OP_N);
                MemorySegment epilogue = arena.allocateFrom(ValueLayout.JAVA_INT, CublasLt.CUBLASLT_EPILOGUE_DEFAULT());
                setDescriptor(desc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA(), noTranspose);
                setDescriptor(desc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSB(), noTranspose);
                setDescriptor(desc, CublasLt.CUBLASLT_MATMUL_DESC_EPILOGUE(), epilogue);
                MemorySegment layoutA = layout(out, undo);
                MemorySegment layoutB = layout(out, undo);
                MemorySegment layoutD = layout(out, undo);
                chooseAlgorithm(arena, out, lt, desc, layoutA, layoutB, layoutD);
                return new Session(o.driver(), o.a(), o.b(), o.d(), o.workspace(), lt, desc, layoutA, layoutB, layoutD,
                        null, undo);
            } catch (Throwable t) {
                throw undo.closeAfter(t);
            }
        }

        /** twins.c's set_up_gemm. */
        static Session openGemm(MemorySegment ptx) {
            Undo undo = new Undo();
            try (Arena arena = Arena.ofConfined()) {
                Operands o = Operands.open(undo, ptx, TwinRow.GEMM_64);
                MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
                // Safety: out holds the handle cublasCreate writes; the stream and workspace are the
                // session's, alive until after the handle is destroyed (undo runs newest first).
                check((int) Calls.CREATE.invokeExact(out), "cublasCreate");
                MemorySegment cublas = out.get(ValueLayout.ADDRESS, 0);
                undo.push(() -> check((int) Calls.DESTROY.invokeExact(cublas), "cublasDestroy"));
                check((int) Calls.SET_STREAM.invokeExact(cublas, o.driver().stream()), "cublasSetStream");
                // After the stream: cublasSetStream resets the handle's workspace to cuBLAS's own.
                check((int) Calls.SET_WORKSPACE.invokeExact(cublas, o.workspace(), WORKSPACE_BYTES), "cublasSetWorkspace");
                return new Session(o.driver(), o.a(), o.b(), o.d(), o.workspace(), null, null, null, null, null, cublas,
                        undo);
            } catch (Throwable t) {
                throw undo.closeAfter(t);
            }
        }

        /** D read back (the stream drained first) and checked: every element 64.0. */
        void expectProduct() throws Throwable {
            short[] host = new short[(int) ELEMENTS];
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment d = arena.allocate(ELEMENTS * Short.BYTES);
                BareDowncalls.copyToHost(d, d().address());
                MemorySegment.copy(d, ValueLayout.JAVA_SHORT, 0, host, 0, host.length);
            }
            TwinWorkload.expectProduct(host);
        }

        /** Drains the stream, then destroys the library objects, frees the buffers and closes the driver session. */
        @Override
        public void close() {
            Throwable failure = null;
            try {
                driver.drain();
            } catch (RuntimeException e) {
                failure = e;
            }
            RuntimeException closing = undo.closeAfter(failure);
            if (closing != null) {
                throw closing;
            }
        }
    }

    /** The driver session and the buffers every GEMM row uses, as twins.c's set_up_gemm_operands makes them. */
    private record Operands(BareDowncalls.Session driver, MemorySegment a, MemorySegment b, MemorySegment d,
            MemorySegment workspace) {

        static Operands open(Undo undo, MemorySegment ptx, TwinRow row) throws Throwable {
            BareDowncalls.Session driver = BareTwin.session(ptx, row);
            undo.push(driver::close);
            long a = allocate(undo, ELEMENTS * Short.BYTES);
            long b = allocate(undo, ELEMENTS * Short.BYTES);
            long d = allocate(undo, ELEMENTS * Short.BYTES);
            long workspace = allocate(undo, WORKSPACE_BYTES);
            BareDowncalls.fill16(driver, a, (short) TwinWorkload.HALF_ONE, ELEMENTS);
            BareDowncalls.fill16(driver, b, (short) TwinWorkload.HALF_ONE, ELEMENTS);
            BareDowncalls.fill16(driver, d, (short) TwinWorkload.HALF_NAN, ELEMENTS);
            return new Operands(driver, MemorySegment.ofAddress(a), MemorySegment.ofAddress(b), MemorySegment.ofAddress(d),
                    MemorySegment.ofAddress(workspace));
        }

        private static long allocate(Undo undo, long bytes) throws Throwable {
            long address = BareDowncalls.allocate(bytes);
            undo.push(() -> BareDowncalls.free(address));
            return address;
        }
    }

    /** One SIZE x SIZE fp16 column-major layout, packed. */
    private static MemorySegment layout(MemorySegment out, Undo undo) throws Throwable {
        check((int) Calls.LAYOUT_CREATE.invokeExact(out, R_16F, (long) SIZE, (long) SIZE, (long) SIZE),
                "cublasLtMatrixLayoutCreate");
        MemorySegment layout = out.get(ValueLayout.ADDRESS, 0);
        undo.push(() -> check((int) Calls.LAYOUT_DESTROY.invokeExact(layout), "cublasLtMatrixLayoutDestroy"));
        return layout;
    }

    private static void setDescriptor(MemorySegment desc, int attribute, MemorySegment value) throws Throwable {
        check((int) Calls.DESC_SET.invokeExact(desc, attribute, value, value.byteSize()), "cublasLtMatmulDescSetAttribute");
    }

    /** The heuristic's first algorithm for the workspace and 16-byte alignment, asked once, copied into {@link #ALGO}. */
    private static void chooseAlgorithm(Arena arena, MemorySegment out, MemorySegment lt, MemorySegment desc,
            MemorySegment layoutA, MemorySegment layoutB, MemorySegment layoutD) throws Throwable {
        check((int) Calls.PREFERENCE_CREATE.invokeExact(out), "cublasLtMatmulPreferenceCreate");
        MemorySegment preference = out.get(ValueLayout.ADDRESS, 0);
        try {
            MemorySegment workspace = arena.allocateFrom(ValueLayout.JAVA_LONG, WORKSPACE_BYTES);
            check((int) Calls.PREFERENCE_SET.invokeExact(preference, CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES(),
                    workspace, workspace.byteSize()), "cublasLtMatmulPreferenceSetAttribute");
            MemorySegment alignment = arena.allocateFrom(ValueLayout.JAVA_INT, ALIGNMENT);
            for (int attribute : new int[] {CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES(),
                CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES(), CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES(),
                CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES()}) {
                check((int) Calls.PREFERENCE_SET.invokeExact(preference, attribute, alignment, alignment.byteSize()),
                        "cublasLtMatmulPreferenceSetAttribute");
            }
            MemorySegment result = arena.allocate(cublasLtMatmulHeuristicResult_t.layout());
            MemorySegment found = arena.allocate(ValueLayout.JAVA_INT);
            // Safety: result holds the one result requested; found the count written.
            check((int) Calls.HEURISTIC.invokeExact(lt, desc, layoutA, layoutB, layoutD, layoutD, preference, 1, result,
                    found), "cublasLtMatmulAlgoGetHeuristic");
            if (found.get(ValueLayout.JAVA_INT, 0) == 0) {
                throw new IllegalStateException("cuBLASLt has no algorithm for a " + SIZE + "^3 fp16 matmul");
            }
            ALGO.copyFrom(cublasLtMatmulHeuristicResult_t.algo(result));
        } finally {
            check((int) Calls.PREFERENCE_DESTROY.invokeExact(preference), "cublasLtMatmulPreferenceDestroy");
        }
    }

    /** A cublasStatus_t other than CUBLAS_STATUS_SUCCESS (0) fails the run, naming the call and the status. */
    private static void check(int status, String call) throws Throwable {
        if (status != 0) {
            // Safety: cublasLtGetStatusName returns a static NUL-terminated string for any status.
            MemorySegment name = (MemorySegment) Calls.LT_STATUS_NAME.invokeExact(status);
            throw new IllegalStateException(call + " returned " + name.getString(0) + " (" + status + ")");
        }
    }

    /** What to destroy, newest first: each step pushed once what it made exists. */
    static final class Undo {

        /** One destruction: a bare call that may fail. */
        @FunctionalInterface
        interface Step {
            void run() throws Throwable;
        }

        private final Deque<Step> steps = new ArrayDeque<>();

        void push(Step step) {
            steps.push(step);
        }

        /**
         * Runs every step, newest first, after {@code failure} (null: none): the first failure
         * (that one, else the first step's), the later ones suppressed; null when there was none.
         */
        RuntimeException closeAfter(Throwable failure) {
            Throwable first = failure;
            while (!steps.isEmpty()) {
                try {
                    steps.pop().run();
                } catch (Throwable t) {
                    if (first == null) {
                        first = t;
                    } else {
                        first.addSuppressed(t);
                    }
                }
            }
            if (first == null || first instanceof RuntimeException) {
                return (RuntimeException) first;
            }
            if (first instanceof Error e) {
                throw e;
            }
            return new IllegalStateException(first);
        }
    }
}
