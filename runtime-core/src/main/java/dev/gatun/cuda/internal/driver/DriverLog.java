package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.events.DriverLogEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's error log (CUDA 12.9 on): the driver explains a refusal in a line that names the
 * argument ("invalid value for attrib", ...), where its result says only
 * {@code CUDA_ERROR_INVALID_VALUE}. Gatun registers one callback per driver
 * ({@code cuLogsRegisterCallback}, when the driver is created), records every line as a JFR event
 * ({@link DriverLogEvent}) and attributes it to the driver call that logged it: a call that fails
 * and becomes a {@code CudaException} carries its own lines, and only those ({@link #take}); the
 * lines of a call that succeeded go to SLF4J (logger {@value #LOGGER}) at DEBUG, and are never
 * attached to another call's exception, on this thread or another.
 *
 * <p>How a line finds its call: the driver delivers each line on the thread whose call logs it,
 * inside that call (the simulated driver does the same). Every call Gatun makes goes through
 * {@link AttributedDriverApi}, which tells {@link #returned} its result as it returns. So the lines
 * that arrived on a thread since its last call returned are the lines of the call returning now:
 * <ul>
 *   <li>it succeeded (or reported {@code CUDA_ERROR_NOT_READY}, a poll, not a failure): its lines
 *       go to SLF4J at DEBUG, named for the call, and are dropped;
 *   <li>it failed: its lines go to SLF4J (errors at WARN, warnings at INFO) and are set aside as
 *       the thread's last failure, with its result, replacing the previous failure's. The
 *       {@code CudaException} Gatun then makes for that result on that thread takes them; an
 *       exception for another result (one Gatun made up, or a failure handed back raw earlier)
 *       finds none.
 * </ul>
 * A line that arrives outside any of Gatun's calls (a call made through another binding, on a
 * thread of the application) goes to SLF4J at DEBUG at once: the callback looks for
 * {@link AttributedDriverApi} on the calling thread's stack, only when a line arrives.
 *
 * <p>Why not {@code cuLogsCurrent} / {@code cuLogsDumpToMemory} around calls: an iterator taken
 * before each call would add a driver call to every launch, replay and event record, which must
 * make exactly the calls of their C equivalents; a dump taken after a failure cannot tell this
 * call's lines from other threads' (the buffer is the process's), and the driver keeps only the
 * last 25,600 bytes. The attribution costs each call, as it returns, a compare of its result and
 * one volatile read of {@link #unsettled} while no line is waiting anywhere (a plain load on x86);
 * a failed call, and a call that returns while some thread has lines waiting, look up their
 * thread's lines (a {@link ThreadLocal}). Nothing is allocated until a line arrives.
 *
 * <p>The callback is an upcall from inside a driver call: it never calls the driver, never throws
 * (an exception escaping an upcall ends the JVM), and keeps at most {@value #LINES_KEPT} lines of
 * at most {@value #LINE_BYTES} bytes per call, the newest.
 *
 * <p>A call whose refusal is an answer, not a failure (the parameter past a kernel's last, an
 * update refused for its topology, a symbol a module lacks), is marked with {@link #asking()}
 * before it and {@link #answered} after it: its lines wait for the answer, and go to DEBUG when
 * the refusal was the answer.
 *
 * <p>A driver without the log (the symbol is absent, or registration answers
 * {@code CUDA_ERROR_NOT_SUPPORTED} or {@code CUDA_ERROR_NOT_FOUND}) is said so once at DEBUG, and
 * Gatun works as before, without {@link AttributedDriverApi}: exceptions carry no driver lines.
 */
final class DriverLog {

    /** The SLF4J logger every driver line goes to. */
    static final String LOGGER = "dev.gatun.cuda.driver";
    /** The most lines one call keeps for its exception: the newest, since a failing call explains itself last. */
    static final int LINES_KEPT = 16;
    /** The most bytes of one line read from the driver; the rest is cut. */
    static final int LINE_BYTES = 4096;
    /** What {@link AttributedDriverApi} reports for a call that threw instead of returning a result. */
    static final int THREW = Integer.MIN_VALUE;

    private static final String REGISTER = "cuLogsRegisterCallback";
    private static final Logger LOG = LoggerFactory.getLogger(DriverLog.class);
    private static final Logger DRIVER = LoggerFactory.getLogger(LOGGER);
    private static final int ERROR = CudaDriver.CU_LOG_LEVEL_ERROR();
    private static final int WARNING = CudaDriver.CU_LOG_LEVEL_WARNING();
    private static final int NOT_READY = CudaDriver.CUDA_ERROR_NOT_READY();
    private static final int NOT_SUPPORTED = CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
    private static final int NOT_FOUND = CudaDriver.CUDA_ERROR_NOT_FOUND();
    private static final ThreadLocal<CallLines> LINES = ThreadLocal.withInitial(CallLines::new);
    private static final StackWalker STACK = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);
    private static final VarHandle UNSETTLED;

    static {
        try {
            UNSETTLED = MethodHandles.lookup().findStaticVarHandle(DriverLog.class, "unsettled", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e); // the field below exists: cannot happen
        }
    }

    /** Lines that arrived inside calls that have not returned yet (or, asked, not been answered), over all threads. */
    private static volatile int unsettled;

    private DriverLog() {
    }

    /** The upcall stub, made on the first registration and kept for the life of the class loader. */
    private static final class Callback {
        /** {@code CUlogsCallback}: {@code void (*)(void *data, CUlogLevel logLevel, char *message, size_t length)}. */
        private static final FunctionDescriptor DESCRIPTOR = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
        // The global arena: the driver keeps the pointer for as long as the process lives, and a
        // freed stub it called would crash the JVM. One stub serves every driver of this class
        // loader, since what it feeds (SLF4J, JFR, the threads' lines) is the class loader's.
        static final MemorySegment STUB = stub();

        private static MemorySegment stub() {
            try {
                return Linker.nativeLinker().upcallStub(MethodHandles.lookup().findStatic(DriverLog.class, "received",
                        DESCRIPTOR.toMethodType()), DESCRIPTOR, Arena.global());
            } catch (ReflectiveOperationException e) {
                throw new AssertionError("DriverLog.received matches " + DESCRIPTOR, e);
            }
        }
    }

    /**
     * Registers the callback with a driver just initialized, or says once (DEBUG) that it keeps no
     * log; never fails: the log only explains errors, it is not needed to use the GPU.
     *
     * @param driver the driver, calling it directly (not through {@link AttributedDriverApi})
     * @return whether the callback is registered (then call the driver through {@link AttributedDriverApi})
     */
    static boolean register(Driver driver) {
        String library = driver.library();
        if (!driver.supports(DriverFeature.DRIVER_LOG)) {
            LOG.debug("The CUDA driver at {} keeps no error log ({} needs a driver for CUDA 12.9 or newer): "
                    + "exceptions carry no driver log lines", library, REGISTER);
            return false;
        }
        DriverApi api = driver.api();
        // Safety: the stub lives in the global arena, longer than any call the driver makes to it;
        // userData is NULL (what the stub feeds is static), and so is callback_out, which the driver
        // documents as optional: the callback is never unregistered.
        int r = api.cuLogsRegisterCallback(Callback.STUB, MemorySegment.NULL, MemorySegment.NULL);
        if (r == NOT_SUPPORTED || r == NOT_FOUND) {
            LOG.debug("The CUDA driver at {} keeps no error log ({} answered {}): exceptions carry no driver log lines",
                    library, REGISTER, CuResults.name(r));
            return false;
        }
        if (r != 0) {
            LOG.warn("{} failed with {}; going on without the driver's error log: exceptions carry no driver log "
                    + "lines", REGISTER, CuResults.name(r));
            return false;
        }
        return true;
    }

    /**
     * A call made through {@link AttributedDriverApi} returned {@code result} (or threw:
     * {@link #THREW}): attributes the lines that arrived on this thread during it.
     *
     * @param function the driver function, named in the DEBUG lines of a call that succeeded
     */
    static void returned(int result, String function) {
        if (result == 0 || result == NOT_READY) {
            if (unsettled != 0) {
                LINES.get().succeeded(result, function);
            }
        } else {
            LINES.get().failed(result);
        }
    }

    /**
     * The lines of the last call that failed on this thread with {@code result}, oldest first, for
     * the exception Gatun makes for it; empty when that call logged none, or when the last
     * failure on this thread had another result. The thread's last failure is forgotten either way.
     */
    static List<String> take(int result) {
        return LINES.get().take(result);
    }

    /**
     * Marks this thread's next driver call as a question whose refusal is an answer, not a
     * failure: the parameter past a kernel's last, an update refused for its topology, a symbol a
     * module lacks. The driver logs such refusals too (on the H200: "paramIndex 4 outside of
     * kernel parameter count 4", for every kernel's first launch), so the call's lines are held
     * until {@link #answered} says which it was. Always paired with {@link #answered}.
     */
    static void asking() {
        LINES.get().asking = true;
    }

    /**
     * Ends a call marked by {@link #asking()}, which returned {@code result} (or threw: any value
     * but 0). Its lines go to SLF4J at DEBUG and are dropped when the refusal was the answer;
     * otherwise they are attributed as those of any call that returned {@code result}.
     */
    static void answered(int result, boolean refusalWasTheAnswer) {
        LINES.get().answered(result, refusalWasTheAnswer);
    }

    /** The callback: one line, recorded (JFR) and kept for the call in progress on this thread. */
    private static void received(MemorySegment data, int level, MemorySegment message, long length) {
        try {
            String line = text(message, length);
            if (line.isEmpty()) {
                return;
            }
            record(level, line);
            CallLines lines = LINES.get();
            if (!lines.asking && !insideGatunCall()) {
                DRIVER.debug("{} (logged outside Gatun's driver calls)", line);
                return;
            }
            lines.add(level, line);
        } catch (Throwable e) {
            // Dropped: nothing here may reach the driver (which is inside its call) or leave the upcall.
        }
    }

    /** Whether this thread is inside a call Gatun makes (a frame of {@link AttributedDriverApi} is on its stack). */
    private static boolean insideGatunCall() {
        return STACK.walk(frames -> frames.anyMatch(f -> f.getDeclaringClass() == AttributedDriverApi.class));
    }

    private static String text(MemorySegment message, long length) {
        if (message.equals(MemorySegment.NULL) || length <= 0) {
            return "";
        }
        // Safety: the driver hands over length bytes at message, readable until the callback
        // returns; at most LINE_BYTES of them are copied here, and the pointer is not kept.
        byte[] bytes = message.reinterpret(Math.min(length, LINE_BYTES)).toArray(ValueLayout.JAVA_BYTE);
        int end = 0;
        while (end < bytes.length && bytes[end] != 0) {
            end++;
        }
        String line = new String(bytes, 0, end, StandardCharsets.UTF_8).strip();
        return length > LINE_BYTES && end == bytes.length ? line + " [cut at " + LINE_BYTES + " bytes]" : line;
    }

    private static String levelName(int level) {
        return level == ERROR ? "error" : level == WARNING ? "warning" : "level " + level;
    }

    /** A JFR event for every line the driver logs, whichever call it belongs to. */
    private static void record(int level, String line) {
        DriverLogEvent event = DriverLogEvent.start();
        if (event != null) {
            event.level = levelName(level);
            event.message = line;
            event.commit();
        }
    }

    /**
     * A line of a call that failed, to SLF4J: errors at WARN, warnings at INFO. The call's caller
     * judges whether the failure is an error (Gatun recovers from some itself, such as an
     * allocation the out-of-memory ladder retries).
     */
    private static void logFailure(int level, String line) {
        if (level == ERROR) {
            DRIVER.warn("{}", line);
        } else {
            DRIVER.info("{}", line);
        }
    }

    /** One thread's lines: those of its call in progress, and those of its last failed call; touched only by that thread. */
    private static final class CallLines {
        /** The call in progress was marked by {@link #asking()}: its lines wait for {@link #answered}. */
        boolean asking;
        /** The newest lines of the call in progress, in a ring, with their levels. */
        private final String[] ring = new String[LINES_KEPT];
        private final int[] levels = new int[LINES_KEPT];
        /** Where the next line goes. */
        private int next;
        private int kept;
        /** How many lines arrived in the call in progress (counted in {@link #unsettled}), kept or not. */
        private int arrived;
        /** The lines of this thread's last failed call, and its result. */
        private List<String> failure = List.of();
        private int failureResult;

        void add(int level, String line) {
            ring[next] = line;
            levels[next] = level;
            next = (next + 1) % ring.length;
            kept = Math.min(kept + 1, ring.length);
            arrived++;
            UNSETTLED.getAndAdd(1);
        }

        /** The call in progress returned {@code returned} (0 or NOT_READY): its lines go to DEBUG, unless it was asked. */
        void succeeded(int returned, String function) {
            if (asking || arrived == 0) {
                return;
            }
            String outcome = returned == 0 ? "succeeded" : "answered " + CuResults.name(returned);
            for (int i = 0; i < kept; i++) {
                DRIVER.debug("{} (logged by {}, which {})", line(i), function, outcome);
            }
            clear();
        }

        /** The call in progress failed with {@code returned}: unless it was asked, see {@link #setAside}. */
        void failed(int returned) {
            if (!asking) {
                setAside(returned);
            }
        }

        /** The call in progress failed with {@code returned}: its lines become this thread's last failure. */
        private void setAside(int returned) {
            failureResult = returned;
            if (kept == 0) {
                failure = List.of();
                return;
            }
            String[] lines = new String[kept];
            for (int i = 0; i < kept; i++) {
                lines[i] = line(i);
                logFailure(levels[index(i)], lines[i]);
            }
            failure = List.of(lines);
            clear();
        }

        void answered(int returned, boolean refusalWasTheAnswer) {
            asking = false;
            if (refusalWasTheAnswer) {
                for (int i = 0; i < kept; i++) {
                    DRIVER.debug("{} (a refusal Gatun asked for as an answer)", line(i));
                }
                clear();
            } else if (returned == 0 || returned == NOT_READY) {
                succeeded(returned, "a question Gatun asked the driver");
            } else {
                setAside(returned);
            }
        }

        List<String> take(int returned) {
            List<String> lines = returned == failureResult ? failure : List.of();
            failure = List.of();
            return lines;
        }

        /** The {@code i}-th kept line of the call in progress, oldest first. */
        private String line(int i) {
            return ring[index(i)];
        }

        private int index(int i) {
            return Math.floorMod(next - kept + i, ring.length);
        }

        /** The call in progress is settled: its lines leave the count of those waiting. */
        private void clear() {
            if (arrived != 0) {
                UNSETTLED.getAndAdd(-arrived);
            }
            Arrays.fill(ring, null);
            next = 0;
            kept = 0;
            arrived = 0;
        }
    }
}
