package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.events.PoolMissEvent;
import dev.gatun.cuda.profiling.internal.GpuKernelEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import jdk.jfr.Event;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Name;
import jdk.jfr.Recording;
import org.junit.jupiter.api.Test;

/**
 * The instrument that tells whether a twin's timed loop was compiled before it was timed, run as
 * {@code compare} runs the twins (a JVM of its own, the loop kept out of its callers with
 * {@code -XX:CompileCommand=dontinline}): it must say yes for a loop warmed as the twins warm
 * theirs, no for a loop never run, and no for the very same warm-up when the JVM may not compile
 * at all ({@code -Xint}: the interpreted loop that made the first bare floor wrong).
 */
class CompileWatchTest {

    /** How long the child keeps warming while the JIT has not installed the loop's C2 code. */
    private static final long PATIENCE_NANOS = 30_000_000_000L;
    /** As compare's {@code jit_flags}, for this test's loop. */
    private static final List<String> KEEP_OUT_OF_CALLERS = List.of("-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline," + CompileWatchTest.class.getName() + "::hotLoop");

    /** A loop warmed the way the twins warm theirs: called in chunks of {@link Twin#WARM_CHUNK}. */
    static long hotLoop(long seed, int n) {
        long x = seed;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    /** Never called. */
    static long coldLoop(long seed, int n) {
        return hotLoop(seed, n) + 1;
    }

    /** Warms {@link #hotLoop} with {@code operations}, in chunks; returns a value so nothing is dead code. */
    static long warm(int operations) {
        long x = 1;
        for (int i = 0; i < operations; i += Twin.WARM_CHUNK) {
            x = hotLoop(x, Twin.WARM_CHUNK);
        }
        return x;
    }

    /**
     * Gatun's event classes on the class path (runtime-core's internal.events, runtime-profiling's
     * internal), found by walking the folders or jars that hold two of them.
     */
    private static List<Class<? extends Event>> gatunEventClasses() throws Exception {
        List<Class<? extends Event>> found = new ArrayList<>();
        for (Class<?> known : List.of(PoolMissEvent.class, GpuKernelEvent.class)) {
            String folder = known.getPackageName().replace('.', '/') + "/";
            Path where = Path.of(known.getProtectionDomain().getCodeSource().getLocation().toURI());
            List<String> entries = new ArrayList<>();
            if (Files.isDirectory(where)) {
                try (java.util.stream.Stream<Path> files = Files.list(where.resolve(folder))) {
                    files.forEach(f -> entries.add(folder + f.getFileName()));
                }
            } else {
                try (JarFile jar = new JarFile(where.toFile())) {
                    jar.stream().forEach(e -> entries.add(e.getName()));
                }
            }
            for (String entry : entries) {
                if (entry.startsWith(folder) && entry.endsWith(".class") && entry.indexOf('/', folder.length()) < 0) {
                    Class<?> c = Class.forName(entry.substring(0, entry.length() - 6).replace('/', '.'), false,
                            known.getClassLoader());
                    if (Event.class.isAssignableFrom(c) && !java.lang.reflect.Modifier.isAbstract(c.getModifiers())) {
                        found.add(c.asSubclass(Event.class));
                    }
                }
            }
        }
        return found;
    }

    @Test
    void theWatchRecordsNoGatunEventNorAnyOtherButItsTwo() throws Exception {
        List<Class<? extends Event>> gatun = gatunEventClasses();
        assertEquals(17, gatun.size(), "Gatun's event classes found: " + gatun);
        List<String> names = gatun.stream().map(c -> c.getAnnotation(Name.class).value()).sorted().toList();
        assertEquals(CompileWatch.GATUN_EVENTS.stream().sorted().toList(), names,
                "CompileWatch.GATUN_EVENTS must name every Gatun event type");
        // The instrument first: a recording that names only the two compilation events turns Gatun's on.
        try (Recording plain = new Recording()) {
            plain.enable("jdk.Compilation");
            plain.start();
            assertTrue(EventType.getEventType(PoolMissEvent.class).isEnabled(), "a plain recording turns PoolMiss on");
        }
        try (CompileWatch watch = new CompileWatch()) {
            for (Class<? extends Event> type : gatun) { // registered after the watch started, most of them
                assertFalse(EventType.getEventType(type).isEnabled(), type + " is recorded under the watch");
            }
            List<String> on = FlightRecorder.getFlightRecorder().getEventTypes().stream().filter(EventType::isEnabled)
                    .map(EventType::getName).sorted().toList();
            assertEquals(List.of("jdk.Compilation", "jdk.Deoptimization"), on);
        }
    }

    @Test
    void aLoopWarmedAsTheTwinsWarmTheirsIsC2sCodeAndANeverRunOneIsNot() throws Exception {
        List<String> verdicts = child(KEEP_OUT_OF_CALLERS, PATIENCE_NANOS);
        assertTrue(verdicts.get(0).startsWith("hot yes " + CompileWatchTest.class.getName() + "::hotLoop: "),
                verdicts.get(0));
        assertTrue(verdicts.get(1).startsWith("cold no " + CompileWatchTest.class.getName() + "::coldLoop: 0 C2 "
                + "compilations"), verdicts.get(1));
    }

    /**
     * A dump holds whatever any recording in the JVM enabled: with the JDK's default recording on
     * as well, the watch must read only its own two event types. On the H100 (f6a7b26) the first
     * compare run died with "Could not find field with name compileId" reading another event.
     */
    @Test
    void anotherRecordingsEventsInTheDumpAreNotReadAsCompilations() throws Exception {
        List<String> withDefaultRecording = new ArrayList<>(KEEP_OUT_OF_CALLERS);
        withDefaultRecording.add("-XX:StartFlightRecording:settings=profile");
        List<String> verdicts = child(withDefaultRecording, PATIENCE_NANOS);
        assertTrue(verdicts.get(0).startsWith("hot yes "), verdicts.get(0));
        assertTrue(verdicts.get(1).startsWith("cold no "), verdicts.get(1));
    }

    @Test
    void theSameWarmUpInAnInterpretingJvmIsReportedNotCompiled() throws Exception {
        // The same warm-up, and a shorter wait: no wait makes an interpreter compile.
        List<String> interpreting = new ArrayList<>(KEEP_OUT_OF_CALLERS);
        interpreting.add("-Xint");
        List<String> verdicts = child(interpreting, 2_000_000_000L);
        assertTrue(verdicts.get(0).startsWith("hot no "), "an interpreted loop must never pass for a compiled one: "
                + verdicts.get(0));
    }

    /** Runs {@link Child} in a JVM of its own with {@code options}; returns its two verdict lines. */
    private static List<String> child(List<String> options, long patienceNanos) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(options);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Child.class.getName(),
                Long.toString(patienceNanos)));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM did not end");
        assertEquals(0, p.exitValue(), out);
        List<String> verdicts = out.lines().filter(l -> l.startsWith("hot ") || l.startsWith("cold ")).toList();
        assertEquals(2, verdicts.size(), out);
        return verdicts;
    }

    /**
     * The warm-up and the checks alone, in a JVM of its own: warms (at least once) until the hot
     * loop is C2's code or the patience given ends (a bound on waiting, not a timed assertion: on a loaded
     * 2-core machine the JIT's queue takes seconds), then prints "hot|cold yes|no DETAIL".
     */
    static final class Child {
        public static void main(String[] args) {
            long deadline = System.nanoTime() + Long.parseLong(args[0]);
            try (CompileWatch watch = new CompileWatch()) {
                CompileWatch.Verdict hot;
                long sink = 0;
                do {
                    sink += warm(BareTwin.FIRST_WARM_UP);
                    hot = watch.check(CompileWatch.Method.of(CompileWatchTest.class, "hotLoop"));
                } while (!hot.compiled() && System.nanoTime() < deadline);
                CompileWatch.Verdict cold = watch.check(CompileWatch.Method.of(CompileWatchTest.class, "coldLoop"));
                System.out.println("sink " + sink);
                System.out.println("hot " + (hot.compiled() ? "yes " : "no ") + hot.detail());
                System.out.println("cold " + (cold.compiled() ? "yes " : "no ") + cold.detail());
            }
        }
    }
}
