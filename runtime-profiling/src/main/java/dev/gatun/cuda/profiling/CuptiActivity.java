package dev.gatun.cuda.profiling;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.profiling.internal.ActivityBuffers;
import dev.gatun.cuda.profiling.internal.ActivityRecords;
import dev.gatun.cuda.profiling.internal.Cupti;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * CUPTI's activity API turned into JFR events: while started, every kernel, copy and memset
 * the GPU runs, in this process, becomes a {@code dev.gatun.GpuKernel}, {@code GpuMemcpy} or
 * {@code GpuMemset} event with its GPU start, end and duration (see the package). Off until
 * started; one at a time per process (CUPTI's activity API is process-wide).
 *
 * <pre>{@code
 * try (CuptiActivity gpu = CuptiActivity.start()) {
 *     ... launches, copies, graph replays ...
 *     gpu.flush(); // the events of everything done so far, now
 * }
 * }</pre>
 *
 * <p>Start it before the work it should see (CUPTI records only what is submitted after the
 * kinds are enabled), and record with a JFR recording that enables the events (the default
 * and profile settings do: they carry no threshold). CUPTI delivers records in buffers, on its
 * own thread, when one fills; {@link #flush()} and {@link #close()} hand over the rest. The
 * submitting threads never wait for it: a buffer CUPTI asks for is a reused one, or a new one
 * when all are in use. With it on, CUPTI instruments each launch: measure its cost for your
 * workload (runtime-core's README, "Profiling a Gatun program").
 */
public final class CuptiActivity implements AutoCloseable {

    /** The kinds enabled: every kernel (without serializing them), copy and memset. */
    private static final int[] KINDS = {ActivityRecords.KIND_CONCURRENT_KERNEL, ActivityRecords.KIND_MEMCPY,
            ActivityRecords.KIND_MEMSET};
    private static final Object LOCK = new Object();
    /** Registered with CUPTI once per process, on the first start (guarded by LOCK). */
    private static ActivityBuffers buffers;
    private static CuptiActivity current;

    private boolean closed;

    private CuptiActivity() {
    }

    /**
     * Enables CUPTI's kernel, copy and memset activity.
     *
     * @return the started subscriber; close it to stop
     * @throws CudaUnavailableException when no CUPTI 13 library can be opened (every place tried)
     * @throws CuptiException when CUPTI is older than 13 or refuses
     * @throws IllegalStateException when one is started already
     */
    public static CuptiActivity start() {
        Cupti.require();
        synchronized (LOCK) {
            if (current != null) {
                throw new IllegalStateException("CUPTI activity is already started in this process; close the "
                        + "CuptiActivity that started it first");
            }
            try {
                if (buffers == null) {
                    checkVersion();
                    ActivityBuffers b = new ActivityBuffers();
                    check("cuptiActivityRegisterCallbacks", Cupti.registerCallbacks(b.requestedStub(), b.completedStub()));
                    buffers = b;
                }
                for (int kind : KINDS) {
                    check("cuptiActivityEnable(" + kind + ")", Cupti.enable(kind));
                }
            } catch (CuptiException e) {
                throw e;
            } catch (Throwable t) {
                throw new AssertionError("a CUPTI downcall threw", t);
            }
            current = new CuptiActivity();
            return current;
        }
    }

    private static void checkVersion() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("cuptiGetVersion", Cupti.version(out));
            int version = out.get(JAVA_INT, 0);
            if (version < Cupti.FIRST_VERSION) {
                throw new CuptiException("cuptiGetVersion", 0, ", and the library's API version is " + version
                        + ": Gatun reads CUPTI 13's records (API version " + Cupti.FIRST_VERSION + " and up); install "
                        + "CUPTI 13 (libcupti.so.13) or point -Dgatun.cupti at it");
            }
        }
    }

    private static void check(String call, int result) {
        if (result != Cupti.SUCCESS) {
            throw new CuptiException(call, result, "; see cupti_result.h (a profiler holding CUPTI, such as Nsight "
                    + "Compute or Nsight Systems, keeps others out: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED is 39)");
        }
    }

    /**
     * Hands over every record CUPTI holds, complete or not ({@code cuptiActivityFlushAll} with
     * {@code CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}): their events are committed before this returns.
     * Records of work still running come with a later flush.
     *
     * @throws IllegalStateException when closed
     */
    public void flush() {
        synchronized (LOCK) {
            if (closed) {
                throw new IllegalStateException("this CuptiActivity is closed; start another");
            }
            flushAll();
        }
    }

    private static void flushAll() {
        try {
            check("cuptiActivityFlushAll", Cupti.flushAll(Cupti.FLUSH_FORCED));
        } catch (CuptiException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("a CUPTI downcall threw", t);
        }
    }

    /** {@return how many kernel records have become events in this process} */
    public long kernels() {
        return buffers.kernels();
    }

    /** {@return how many copy records have become events in this process} */
    public long copies() {
        return buffers.copies();
    }

    /** {@return how many memset records have become events in this process} */
    public long memsets() {
        return buffers.memsets();
    }

    /** {@return how many 1 MiB buffers CUPTI has been given (each reused after)} */
    public long buffers() {
        return buffers.buffers();
    }

    /** Disables the activity kinds and hands over what CUPTI still holds. Idempotent. */
    @Override
    public void close() {
        synchronized (LOCK) {
            if (closed) {
                return;
            }
            closed = true;
            current = null;
            try {
                for (int kind : KINDS) {
                    check("cuptiActivityDisable(" + kind + ")", Cupti.disable(kind));
                }
            } catch (CuptiException e) {
                throw e;
            } catch (Throwable t) {
                throw new AssertionError("a CUPTI downcall threw", t);
            } finally {
                flushAll();
            }
        }
    }
}
