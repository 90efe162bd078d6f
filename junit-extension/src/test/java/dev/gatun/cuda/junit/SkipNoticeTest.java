package dev.gatun.cuda.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The skip reason on standard error, once per JVM, and the trap of a driver that sees no device
 * ({@code CUDA_VISIBLE_DEVICES=""}). Each case runs in a fresh JVM ({@link SkipNoticeChild}): the
 * notice is printed once per JVM, so this test's own JVM cannot show it twice. The child's SLF4J
 * provider is gatun-core's test one, which prints nothing: the line appears without any logging.
 */
class SkipNoticeTest {

    private static final String NOTICE = "stderr| gatun-junit: GPU tests are skipped in this JVM: ";

    /**
     * The child's output lines, after checking that it exited with 0. (gatun-core's test jar has
     * a ChildJvm, but in package dev.gatun.cuda, which this module reads from gatun-core's module:
     * a split package that javac will not look into.)
     */
    private static List<String> child(Map<String, String> environment, String... arguments) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                SkipNoticeChild.class.getName()));
        command.addAll(List.of(arguments));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("CUDA_VISIBLE_DEVICES");
        builder.environment().putAll(environment);
        Process p = builder.start();
        List<String> lines = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
        assertEquals(0, p.exitValue(), String.join("\n", lines));
        return lines;
    }

    private static List<String> withPrefix(List<String> lines, String prefix) {
        return lines.stream().filter(l -> l.startsWith(prefix)).toList();
    }

    @Test
    void withoutADriverTheReasonIsPrintedOnceOnStandardErrorHoweverManyClassesAndRunsSkip() throws Exception {
        List<String> lines = child(Map.of(), "no-driver");
        List<String> outcomes = withPrefix(lines, "outcome| ");
        assertEquals(3, outcomes.size(), String.join("\n", lines));
        outcomes.forEach(o -> assertTrue(o.startsWith("outcome| SKIPPED | no CUDA driver/GPU"), o));
        List<String> notices = withPrefix(lines, NOTICE);
        assertEquals(List.of(NOTICE + "no CUDA driver/GPU: No CUDA driver could be loaded. Tried: " + NoGpu.TRIED
                + "; GPU tests run only on a GPU host (gatun.gpu.required=true makes this a failure)"), notices,
                String.join("\n", lines));
        assertEquals(1, lines.stream().filter(l -> l.contains("GPU tests are skipped")).count(), "once, in any form");
    }

    @Test
    void aDriverThatReportsNoDeviceSkipsSayingSoAndNamesTheDeviceFilter() throws Exception {
        Map<String, String> hidden = Map.of("CUDA_VISIBLE_DEVICES", "");
        String filter = " (CUDA_VISIBLE_DEVICES is '': the driver shows only the devices it lists)";
        // The driver loads and reports 0 devices ...
        List<String> lines = child(hidden, "no-device");
        assertEquals(List.of(NOTICE + "the CUDA driver (simulated driver) reports no device" + filter
                + "; GPU tests run only on a GPU host (gatun.gpu.required=true makes this a failure)"),
                withPrefix(lines, NOTICE), String.join("\n", lines));
        assertTrue(withPrefix(lines, "outcome| ").getFirst().startsWith("outcome| SKIPPED | the CUDA driver "
                + "(simulated driver) reports no device" + filter), String.join("\n", lines));
        // ... or cuInit fails with CUDA_ERROR_NO_DEVICE, which is what drivers answer to an empty filter.
        lines = child(hidden, "cuinit-no-device");
        String notice = withPrefix(lines, NOTICE).getFirst();
        assertTrue(notice.contains("simulated driver loaded, but cuInit failed: CUDA_ERROR_NO_DEVICE (100)")
                && notice.contains(filter), notice);
        assertTrue(withPrefix(lines, "outcome| ").getFirst().startsWith("outcome| SKIPPED | "),
                String.join("\n", lines));
    }

    @Test
    void aRequiredGpuThatTheDeviceFilterHidesFailsWithTheReasonAndTheDiagnosisAndSkipsNothing() throws Exception {
        Map<String, String> hidden = Map.of("CUDA_VISIBLE_DEVICES", "");
        for (String driver : List.of("no-device", "cuinit-no-device")) {
            List<String> lines = child(hidden, driver, "required");
            String outcome = withPrefix(lines, "outcome| ").getFirst();
            assertTrue(outcome.startsWith("outcome| FAILED | "), outcome);
            assertTrue(outcome.contains("gatun.gpu.required is true, but there is no usable GPU: ")
                    && outcome.contains("(CUDA_VISIBLE_DEVICES is '': the driver shows only the devices it lists)"), outcome);
            // The diagnosis is of this JVM, the real one (no driver on CI), and shows the filter too.
            assertTrue(outcome.contains("|Gatun doctor|") && outcome.contains("environment CUDA_VISIBLE_DEVICES= (the "
                    + "driver shows only the devices it lists, here none)"), outcome);
            assertEquals(List.of(), withPrefix(lines, NOTICE), driver + ": a failure is not a skip");
        }
    }
}
