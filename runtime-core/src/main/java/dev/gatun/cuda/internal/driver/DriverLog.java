package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.events.DriverLogEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's error log (CUDA 12.9 on): the driver explains a refusal in a line that names the
 * argument ("invalid value for attrib", ...), where its result says only
 * {@code CUDA_ERROR_INVALID_VALUE}. Gatun registers one callback per driver
 * ({@code cuLogsRegisterCallback}, when the driver is created) that forwards every line to SLF4J
 * (logger {@value #LOGGER}) and to JFR ({@link DriverLogEvent}), and keeps the newest
 * {@value #LINES_KEPT} lines of each thread until the next {@code CudaException} Gatun makes on
 * that thread ({@link #take}), which carries them.
 *
 * <p>Why a callback, and not {@code cuLogsCurrent} / {@code cuLogsDumpToMemory} around calls:
 * taking an iterator before each call would add a driver call to every launch, replay and event
 * record, which must make exactly the calls of their C equivalents. Dumping the log only once a
 * call has failed, with no iterator taken before it, cannot tell this call's lines from other
 * threads' (the buffer is the process's, and the thread id it prints is the OS thread's, which Java
 * does not expose), and the driver keeps only the last 25,600 bytes, which other threads' failures
 * can overwrite. The callback costs nothing while nothing is logged: the driver calls it only when
 * it logs, on the thread whose call logs, so the lines of a failed call are in that thread's buffer
 * when the call returns, without any bookkeeping per call. Lines no exception carries (a call
 * through a raw handle, a warning) still reach SLF4J and JFR.
 *
 * <p>The callback is an upcall from inside a driver call: it never calls the driver, never throws
 * (an exception escaping an upcall ends the JVM), and keeps at most {@value #LINES_KEPT} lines of
 * at most {@value #LINE_BYTES} bytes per thread. Lines of a failure Gatun handed back raw and
 * never threw (a retirement free the driver refused), and lines the driver logs in calls that
 * succeed (on the H200 under compute-sanitizer: "Unsupported node type: 6" for graph calls), stay
 * in the thread's buffer and ride along with its next exception, before that call's own lines,
 * which are always the newest; SLF4J has every line in order.
 *
 * <p>A driver without the log (the symbol is absent, or registration answers
 * {@code CUDA_ERROR_NOT_SUPPORTED} or {@code CUDA_ERROR_NOT_FOUND}) is said so once at DEBUG, and
 * Gatun works as before: exceptions carry no driver lines.
 */
final class DriverLog {

    /** The SLF4J logger every driver line goes to. */
    static final String LOGGER = "dev.gatun.cuda.driver";
    /** The most lines a thread keeps for its next exception: the newest, since a failed call logs last. */
    static final int LINES_KEPT = 16;
    /** The most bytes of one line read from the driver; the rest is cut. */
    static final int LINE_BYTES = 4096;

    private static final String REGISTER = "cuLogsRegisterCallback";
    private static final Logger LOG = LoggerFactory.getLogger(DriverLog.class);
    private static final Logger DRIVER = LoggerFactory.getLogger(LOGGER);
    private static final int ERROR = CudaDriver.CU_LOG_LEVEL_ERROR();
    private static final int WARNING = CudaDriver.CU_LOG_LEVEL_WARNING();
    private static final int NOT_SUPPORTED = CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
    private static final int NOT_FOUND = CudaDriver.CUDA_ERROR_NOT_FOUND();
    private static final ThreadLocal<Lines> PENDING = ThreadLocal.withInitial(Lines::new);
    private static final ThreadLocal<Asked> ASKED = ThreadLocal.withInitial(Asked::new);

    private DriverLog() {
    }

    /** The upcall stub, made on the first registration and kept for the life of the class loader. */
    private static final class Callback {
        /** {@code CUlogsCallback}: {@code void (*)(void *data, CUlogLevel logLevel, char *message, size_t length)}. */
        private static final FunctionDescriptor DESCRIPTOR = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
        // The global arena: the driver keeps the pointer for as long as the process lives, and a
        // freed stub it called would crash the JVM. One stub serves every driver of this class
        // loader, since what it feeds (SLF4J, JFR, the threads' buffers) is the class loader's.
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
     * @param library where the driver came from, for messages
     */
    static void register(DriverApi api, String library) {
        if (!api.hasSymbol(REGISTER)) {
            LOG.debug("The CUDA driver at {} keeps no error log ({} needs a driver for CUDA 12.9 or newer): "
                    + "exceptions carry no driver log lines", library, REGISTER);
            return;
        }
        // Safety: the stub lives in the global arena, longer than any call the driver makes to it;
        // userData is NULL (what the stub feeds is static), and so is callback_out, which the driver
        // documents as optional: the callback is never unregistered.
        int r = api.cuLogsRegisterCallback(Callback.STUB, MemorySegment.NULL, MemorySegment.NULL);
        if (r == NOT_SUPPORTED || r == NOT_FOUND) {
            LOG.debug("The CUDA driver at {} keeps no error log ({} answered {}): exceptions carry no driver log lines",
                    library, REGISTER, CuResults.name(r));
        } else if (r != 0) {
            LOG.warn("{} failed with {}; going on without the driver's error log: exceptions carry no driver log "
                    + "lines", REGISTER, CuResults.name(r));
        }
    }

    /** The lines the driver logged on this thread since the last call, oldest first; the thread's buffer is then empty. */
    static List<String> take() {
        return PENDING.get().take();
    }

    /**
     * Marks this thread's next driver call as a question whose refusal is an answer, not a
     * failure: the parameter past a kernel's last, an update refused for its topology, a symbol a
     * module lacks. The driver logs such refusals too (on the H200: "paramIndex 4 outside of
     * kernel parameter count 4", for every kernel's first launch), so the call's lines are held
     * until {@link #answered} says which it was. Always paired with {@link #answered}.
     */
    static void asking() {
        ASKED.get().asking = true;
    }

    /**
     * Ends a call marked by {@link #asking()}. Its lines go to SLF4J at DEBUG and are dropped when
     * the refusal was the answer; otherwise (success, or another failure) they are what the call
     * logged, forwarded and kept for the thread's next exception as any line is.
     */
    static void answered(boolean refusalWasTheAnswer) {
        Asked asked = ASKED.get();
        asked.asking = false;
        for (int k = 0; k < asked.lines.size(); k++) {
            String line = asked.lines.get(k);
            if (refusalWasTheAnswer) {
                DRIVER.debug("{} (a refusal Gatun asked for as an answer)", line);
            } else {
                forward(asked.levels.get(k), line);
                PENDING.get().add(line);
            }
        }
        asked.lines.clear();
        asked.levels.clear();
    }

    /** A thread's call marked by {@link #asking()}, and the lines it logged so far. */
    private static final class Asked {
        boolean asking;
        final List<String> lines = new ArrayList<>(2);
        final List<Integer> levels = new ArrayList<>(2);
    }

    /** The callback: one line, forwarded and kept for this thread. */
    private static void received(MemorySegment data, int level, MemorySegment message, long length) {
        try {
            String line = text(message, length);
            if (line.isEmpty()) {
                return;
            }
            Asked asked = ASKED.get();
            if (asked.asking) {
                asked.lines.add(line);
                asked.levels.add(level);
                return;
            }
            forward(level, line);
            PENDING.get().add(line);
        } catch (Throwable e) {
            // Dropped: nothing here may reach the driver (which is inside its call) or leave the upcall.
        }
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

    /**
     * To SLF4J and JFR. The driver's errors are logged at WARN, its warnings at INFO: the call that
     * failed throws, with the line, and whether that is an error is its caller's to say (Gatun
     * recovers from some itself, such as an allocation the out-of-memory ladder retries).
     */
    private static void forward(int level, String line) {
        String name;
        if (level == ERROR) {
            name = "error";
            DRIVER.warn("{}", line);
        } else {
            name = level == WARNING ? "warning" : "level " + level;
            DRIVER.info("{}", line);
        }
        DriverLogEvent event = DriverLogEvent.start();
        if (event != null) {
            event.level = name;
            event.message = line;
            event.commit();
        }
    }

    /** One thread's newest lines, touched only by that thread. */
    private static final class Lines {
        private final String[] ring = new String[LINES_KEPT];
        /** Where the next line goes. */
        private int next;
        private int count;

        void add(String line) {
            ring[next] = line;
            next = (next + 1) % ring.length;
            count = Math.min(count + 1, ring.length);
        }

        List<String> take() {
            if (count == 0) {
                return List.of();
            }
            String[] lines = new String[count];
            for (int i = 0; i < count; i++) {
                lines[i] = ring[Math.floorMod(next - count + i, ring.length)];
            }
            Arrays.fill(ring, null);
            count = 0;
            return List.of(lines);
        }
    }
}
