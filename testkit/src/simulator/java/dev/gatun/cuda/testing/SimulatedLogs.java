package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The simulated driver's error log (CUDA 12.9): the callbacks registered with
 * {@code cuLogsRegisterCallback}, and the lines the other areas log when they refuse a call,
 * each naming the function and the argument it refused ("cuFuncSetAttribute: value ... for
 * attrib ..."), as the real driver explains a refusal. Each line goes to every callback through
 * its native function pointer, on the calling thread, inside the refused call, with a message
 * that is freed once the callbacks return: what Gatun's upcall sees from the real driver. A test
 * can also have a chosen call log lines whatever it returns ({@link #logDuringNext}), as the
 * real driver logs in calls that succeed (on the H100: "Unsupported node type" in graph calls).
 */
final class SimulatedLogs {

    /** {@code CUlogsCallback}: {@code void (*)(void *data, CUlogLevel logLevel, char *message, size_t length)}. */
    private static final MethodHandle CALLBACK = Linker.nativeLinker().downcallHandle(FunctionDescriptor.ofVoid(
            ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));

    private record Registration(MemorySegment function, MemorySegment userData) {
    }

    private record Line(int level, String text) {
    }

    private final FakeDriverApi gpu;
    private final List<Registration> callbacks = new ArrayList<>();
    /** Lines to log inside the next call of a function on a thread (guarded by the simulated driver's lock). */
    private final Map<Thread, Map<String, List<Line>>> during = new HashMap<>();

    SimulatedLogs(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuLogsRegisterCallback(MemorySegment callbackFunc, MemorySegment userData, MemorySegment callback_out) {
        if (callbackFunc.equals(MemorySegment.NULL)) {
            return INVALID_VALUE;
        }
        callbacks.add(new Registration(callbackFunc, userData));
        if (!callback_out.equals(MemorySegment.NULL)) {
            callback_out.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, gpu.newHandle());
        }
        return SUCCESS;
    }

    /** How many callbacks are registered. */
    int callbacks() {
        return callbacks.size();
    }

    /** The next call of {@code function} on the calling thread logs {@code line} at {@code level}, whatever it returns. */
    void logDuringNext(String function, int level, String line) {
        during.computeIfAbsent(Thread.currentThread(), t -> new HashMap<>())
                .computeIfAbsent(function, f -> new ArrayList<>()).add(new Line(level, line));
    }

    /** A call of {@code function} begins on the calling thread: it logs what {@link #logDuringNext} planned for it. */
    void calling(String function) {
        Map<String, List<Line>> planned = during.get(Thread.currentThread());
        List<Line> lines = planned == null ? null : planned.remove(function);
        if (lines != null) {
            for (Line l : lines) {
                log(l.level(), l.text());
            }
        }
    }

    /** The driver refuses a call of {@code function}, saying why. */
    void refused(String function, String why) {
        log(CudaDriver.CU_LOG_LEVEL_ERROR(), function + ": " + why);
    }

    /** Hands {@code line} to every callback, as the driver does for each line it logs. */
    void log(int level, String line) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment message = arena.allocateFrom(line);
            for (Registration r : callbacks) {
                CALLBACK.invokeExact(r.function(), r.userData(), level, message, message.byteSize() - 1);
            }
        } catch (Throwable e) {
            throw new AssertionError("a driver log callback failed", e);
        }
    }
}
