package dev.gatun.cuda.bench;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The floor under a row: its driver calls made as bare FFM downcalls ({@link BareDowncalls}: no
 * owner, no checked layer, no bookkeeping), on a stream set up as twins.c sets up the C twin's
 * ({@link BareDowncalls.Session#openAsTwins}), timed the way both twins time theirs (a warm-up of
 * N/2, then N, one final synchronize). {@link SameProcess} runs it beside the C and Gatun twins
 * with {@code --bare} (compare's {@code BARE=1}), so that the table shows, from the same process
 * and slices, what the Java-to-C transition alone costs over C and what Gatun costs over it. The
 * rows whose whole operation is two driver calls have one (the event record + query, the
 * stream-ordered allocate + free, the allocate from a created pool + free, and the pool-off
 * cuMemAlloc + cuMemFree), and so do the GEMM rows, whose operation is one
 * library call ({@link BareGemm}: {@code cublasLtMatmul} or {@code cublasGemmEx}, timed in batches
 * of {@link TwinRow#BATCH} as both other twins time those rows).
 *
 * <p><b>Compiled before it is timed.</b> A floor measured in the interpreter is no floor: an FFM
 * downcall from an interpreted loop costs 100 ns and more over a compiled one (issue 36: the
 * first version of this class ran its loop inside one call, with its handles in plain fields,
 * and landed 6–18 % above C, where a compiled bare loop lands 1–3 % above). So each row's loop is
 * a method of its own ({@link #allocateLoop}, {@link #eventLoop}), called in chunks of
 * {@value Twin#WARM_CHUNK} during the warm-up, as {@link Twin}'s loop is, so that it is compiled
 * as a method (not only on stack) and the timed call enters compiled code; the first run of a row
 * in a process warms it with at least {@value #FIRST_WARM_UP} operations; and {@link SameProcess}
 * asks a {@link CompileWatch} whether C2's code of the loop is live before the first reported
 * run, and says so in its output.
 */
final class BareTwin {

    /** Operations of the first warm-up of a row in a process: where HotSpot has long compiled a hot loop with C2. */
    static final int FIRST_WARM_UP = 200_000;
    /**
     * {@code -Dgatun.bench.bareVia=step|loop}: the event and stream-ordered rows' operations made by
     * twins.c on this session's stream and event ({@link BareDowncalls.ViaC}): {@code step}, one downcall per
     * operation into twins.c, which calls the driver; {@code loop}, one downcall per {@code n}
     * operations, twins.c's own loop. Unset ({@code java}): every driver call a downcall from the
     * Java loop. The event and stream-ordered rows only: the others run their Java loop, as the
     * COMPILED line's method says. An experiment on the floor, as {@link BareDowncalls#CRITICAL}: it tells whether the in-process
     * gap to C is the Java-to-C call, the Java loop around it, or the handles.
     */
    static final Via VIA = Via.of(System.getProperty("gatun.bench.bareVia", "java"));
    /**
     * {@code -Dgatun.bench.bareSetUp=minimal}: {@link BareTwin} and {@link BareGemm} open their
     * session with {@link BareDowncalls.Session#open} (a stream and an event, nothing else) instead of twins.c's
     * set-up ({@link BareDowncalls.Session#openAsTwins}). An experiment on the floor, as {@link BareDowncalls#CRITICAL}: the
     * set-up the bare twin had until bad1fb4: twins.c's own loop ran the event row some 26 ns an
     * operation slower on its handles than on the C twin's (call 32), and the floor read 1.13× C
     * where, with twins.c's set-up, it read 1.05× in the same call (call 33).
     */
    static final boolean MINIMAL_SET_UP = System.getProperty("gatun.bench.bareSetUp", "twins").equals("minimal");

    /** The rows whose loop this process has warmed with {@link #FIRST_WARM_UP} operations. */
    private static final Set<TwinRow> WARM = EnumSet.noneOf(TwinRow.class);

    private BareTwin() {
    }

    /** Whether {@code row} has a bare twin. */
    static boolean covers(TwinRow row) {
        return switch (row) {
            case ALLOC_STREAM_ORDERED, EVENT_RECORD_QUERY, ALLOC_FROM_POOL, ALLOC_UNPOOLED -> true;
            default -> BareGemm.covers(row);
        };
    }

    /** Whether {@link #VIA} applies to {@code row}: the event and stream-ordered rows, whose operations twins.c's entries make. */
    private static boolean viaC(TwinRow row) {
        return VIA != Via.JAVA && (row == TwinRow.ALLOC_STREAM_ORDERED || row == TwinRow.EVENT_RECORD_QUERY);
    }

    /** The values of {@code gatun.bench.bareVia}. */
    enum Via {
        JAVA, STEP, LOOP;

        /** The value named {@code name} (any case); an unknown name is refused, not read as another. */
        static Via of(String name) {
            for (Via v : values()) {
                if (v.name().equalsIgnoreCase(name)) {
                    return v;
                }
            }
            throw new IllegalArgumentException("gatun.bench.bareVia is '" + name + "': give java, step or loop");
        }
    }

    /** The method whose compiled code times {@code row}'s operations, for {@link CompileWatch}. */
    static CompileWatch.Method loopOf(TwinRow row) {
        requireCovered(row, 1);
        if (BareGemm.covers(row)) {
            return CompileWatch.Method.of(BareGemm.class, BareGemm.loopName(row));
        }
        if (viaC(row)) {
            return CompileWatch.Method.of(BareDowncalls.ViaC.class, "run");
        }
        return CompileWatch.Method.of(BareTwin.class, switch (row) {
            case ALLOC_STREAM_ORDERED -> "allocateLoop";
            case ALLOC_FROM_POOL -> "poolLoop";
            case ALLOC_UNPOOLED -> "unpooledLoop";
            default -> "eventLoop";
        });
    }

    /**
     * The timed nanoseconds of {@code n} operations of {@code row}, on a session of its own set up
     * as twins.c sets up the row ({@link #session}; the device's primary context, retained and
     * released around the run).
     *
     * @throws IllegalArgumentException when the row has no bare twin, or {@code n} is not positive
     *     (for a GEMM row, not a positive multiple of {@link TwinRow#BATCH})
     * @throws TwinWorkload.LibraryMissing for a GEMM row where cuBLASLt or cuBLAS cannot be opened
     */
    static long measure(TwinRow row, int n, MemorySegment ptx) throws Throwable {
        if (BareGemm.covers(row)) {
            return BareGemm.measure(row, n, ptx); // which checks n against its batches
        }
        requireCovered(row, n);
        try (BareDowncalls.Session s = session(ptx, row)) {
            int warmUp = WARM.contains(row) ? n / 2 : Math.max(FIRST_WARM_UP, n / 2);
            for (int i = 0; i < warmUp; i += Twin.WARM_CHUNK) {
                run(row, s, Math.min(Twin.WARM_CHUNK, warmUp - i));
            }
            s.drain();
            WARM.add(row);
            long start = System.nanoTime();
            run(row, s, n);
            s.drain();
            return System.nanoTime() - start;
        }
    }

    /**
     * The session a bare run of {@code row} measures on: twins.c's set-up of the row on {@code ptx}
     * (NUL-terminated PTX text, the C twin's), or a stream and the row's own set-up alone under
     * {@link #MINIMAL_SET_UP}.
     */
    static BareDowncalls.Session session(MemorySegment ptx, TwinRow row) {
        return MINIMAL_SET_UP ? BareDowncalls.Session.open(row) : BareDowncalls.Session.openAsTwins(ptx, row);
    }

    private static void run(TwinRow row, BareDowncalls.Session s, int n) throws Throwable {
        if (viaC(row)) {
            BareDowncalls.ViaC.run(row == TwinRow.ALLOC_STREAM_ORDERED, s, n);
            return;
        }
        switch (row) {
            case ALLOC_STREAM_ORDERED -> allocateLoop(s, n);
            case ALLOC_FROM_POOL -> poolLoop(s, n);
            case ALLOC_UNPOOLED -> unpooledLoop(n);
            default -> eventLoop(s, n);
        }
    }

    /** The stream-ordered row's loop: {@code n} allocate + free pairs. */
    static void allocateLoop(BareDowncalls.Session s, int n) throws Throwable {
        for (int i = 0; i < n; i++) {
            BareDowncalls.allocateAndFree(s);
        }
    }

    /** The created-pool row's loop: {@code n} allocate-from-pool + free pairs. */
    static void poolLoop(BareDowncalls.Session s, int n) throws Throwable {
        for (int i = 0; i < n; i++) {
            BareDowncalls.allocateFromPoolAndFree(s);
        }
    }

    /** The pool-off row's loop: {@code n} cuMemAlloc + cuMemFree pairs. */
    static void unpooledLoop(int n) throws Throwable {
        for (int i = 0; i < n; i++) {
            BareDowncalls.allocateAndFreeUnpooled();
        }
    }

    /** The event row's loop: {@code n} record + query pairs. */
    static void eventLoop(BareDowncalls.Session s, int n) throws Throwable {
        for (int i = 0; i < n; i++) {
            BareDowncalls.recordAndQuery(s);
        }
    }

    private static void requireCovered(TwinRow row, int n) {
        if (!covers(row) || n <= 0) {
            throw new IllegalArgumentException(row.id() + " with N " + n + ": only "
                    + Arrays.stream(TwinRow.values()).filter(BareTwin::covers).map(TwinRow::id).collect(Collectors.joining(", "))
                    + " have a bare twin, with N more than 0");
        }
    }
}
