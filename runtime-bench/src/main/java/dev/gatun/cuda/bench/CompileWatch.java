package dev.gatun.cuda.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;

/**
 * Whether a twin's timed loop is compiled by C2 before it is timed: a ratio of a loop that still
 * ran in the interpreter, or in C1's profiling code, measures the JIT's warm-up, not the binding
 * (an FFM downcall from the interpreter costs 100 ns and more over a compiled one; issue 36).
 *
 * <p>How: a Flight Recorder recording of every {@code jdk.Compilation} (threshold 0: every
 * compilation, not only the slow ones) and {@code jdk.Deoptimization} event in this JVM. At a
 * check the recording is dumped (which flushes every thread's buffer) and read back: the loop is
 * compiled when a standalone (not on-stack-replacement) level-4 compilation of it succeeded and
 * no later deoptimization made that compilation not entrant. A loop method timed in one call
 * needs the standalone compilation: an on-stack-replacement one serves only the invocation that
 * triggered it, and the next call starts in the interpreter again.
 */
final class CompileWatch implements AutoCloseable {

    /** HotSpot's level of C2-compiled code. */
    static final int C2 = 4;

    /** The two event types the watch reads; every other one it turns off. */
    private static final Set<String> WATCHED = Set.of("jdk.Compilation", "jdk.Deoptimization");

    /**
     * Gatun's own Flight Recorder events (runtime-core's {@code internal.events}, runtime-profiling's
     * GPU activity), by name. A running recording that does not name an event type records it as
     * its annotations say, which for these is on: a watch that did not turn them off had the
     * Gatun and baseline twins pay for them inside their timed loops (a begun {@code PoolMiss} on
     * every allocation of the pool-off row, a {@code SynchronousCopy} on every readback), which a
     * program without a recording never pays. Named here because a type is registered only when
     * its class is first used, after the watch starts; {@code CompileWatchTest} checks the list
     * against the event classes on the class path.
     */
    static final List<String> GATUN_EVENTS = List.of("dev.gatun.ContextPoisoned", "dev.gatun.DriverLog",
            "dev.gatun.GraphCapture", "dev.gatun.GraphInstall", "dev.gatun.GraphInstantiate", "dev.gatun.GraphUpdate",
            "dev.gatun.MemoryCap", "dev.gatun.ModuleLoad", "dev.gatun.NvrtcCompile", "dev.gatun.OutOfMemory",
            "dev.gatun.OutOfMemoryRung", "dev.gatun.PoolMiss", "dev.gatun.RetirementBacklog",
            "dev.gatun.SynchronousCopy", "dev.gatun.GpuKernel", "dev.gatun.GpuMemcpy", "dev.gatun.GpuMemset");

    private final Recording recording = new Recording();
    private final Path dump;

    CompileWatch() {
        recording.enable("jdk.Compilation").withThreshold(Duration.ZERO).withoutStackTrace();
        recording.enable("jdk.Deoptimization").withoutStackTrace();
        // Nothing else: the types registered by now (the JDK's), and Gatun's by name, registered
        // or not (a setting by name holds for a type registered later). Another recording that
        // turns one on (./profile's) still records it: settings of recordings add up.
        for (EventType type : FlightRecorder.getFlightRecorder().getEventTypes()) {
            if (!WATCHED.contains(type.getName())) {
                recording.disable(type.getName());
            }
        }
        GATUN_EVENTS.forEach(recording::disable);
        recording.start();
        try {
            dump = Files.createTempFile("gatun-compile-watch", ".jfr");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A method the watch asks about: its class's binary name, its name, and a loader that defined it (null: any). */
    record Method(String className, String name, ClassLoader loader) {

        static Method of(Class<?> type, String name) {
            return new Method(type.getName(), name, type.getClassLoader());
        }
    }

    /** What a check found: whether the method's standalone C2 code is live, and in words. */
    record Verdict(boolean compiled, String detail) {
    }

    /** Whether {@code m} has standalone C2 code that no deoptimization has made not entrant, as of now. */
    Verdict check(Method m) {
        List<RecordedEvent> events;
        try {
            recording.dump(dump);
            events = RecordingFile.readAllEvents(dump);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        events.sort((a, b) -> a.getStartTime().compareTo(b.getStartTime()));
        Set<Integer> live = new HashSet<>();
        int compilations = 0;
        int osr = 0;
        int invalidated = 0;
        for (RecordedEvent e : events) {
            // A dump holds every event recorded while this recording ran, also those another
            // recording in the JVM enabled (Gatun's own events, a -XX:StartFlightRecording): skip them.
            String type = e.getEventType().getName();
            if (!type.equals("jdk.Compilation") && !type.equals("jdk.Deoptimization")) {
                continue;
            }
            int id = e.getInt("compileId");
            if (type.equals("jdk.Compilation")) {
                RecordedMethod method = e.getValue("method");
                if (method == null || !names(method, m)) {
                    continue;
                }
                // "succeded" is the field's name in the JDK's event, spelled so.
                if (e.getBoolean("succeded") && e.getInt("compileLevel") == C2) {
                    compilations++;
                    if (e.getBoolean("isOsr")) {
                        osr++;
                    } else {
                        live.add(id);
                    }
                }
            } else if (makesNotEntrant(e.getString("action")) && live.remove(id)) {
                // Matched by compilation, not by method: the trap may lie in a method inlined into the loop.
                invalidated++;
            }
        }
        String detail = m.className() + "::" + m.name() + ": " + compilations + " C2 compilations (" + osr
                + " on-stack replacement), " + invalidated + " made not entrant since, " + live.size() + " live";
        return new Verdict(!live.isEmpty(), detail);
    }

    /** Whether a deoptimization's action leaves its compiled code unusable for later calls. */
    private static boolean makesNotEntrant(String action) {
        return "reinterpret".equals(action) || "make_not_entrant".equals(action);
    }

    private static boolean names(RecordedMethod method, Method m) {
        if (!method.getName().equals(m.name()) || !method.getType().getName().equals(m.className())) {
            return false;
        }
        if (m.loader() == null) {
            return true;
        }
        // Twins of the same class in two loaders (Gatun's and a baseline jar's): told apart by the
        // loader's class, since JFR records loaders by class and name, not identity.
        var recorded = method.getType().getClassLoader();
        return recorded != null && recorded.getType() != null
                && recorded.getType().getName().equals(m.loader().getClass().getName());
    }

    @Override
    public void close() {
        recording.close();
        try {
            Files.deleteIfExists(dump);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
