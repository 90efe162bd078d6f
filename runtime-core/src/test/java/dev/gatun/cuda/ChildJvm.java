package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a test class's {@code main} in a fresh JVM on this test's class path. The process's
 * driver and NVRTC are loaded once per class loader, so loader behaviour is tested in a JVM of
 * its own, with the system properties and environment variables it needs.
 */
public final class ChildJvm {

    private ChildJvm() {
    }

    /**
     * @param environment variables to set in the child (Gatun's own overrides are removed first)
     * @param jvmOptions options for the child JVM, such as system properties
     * @param arguments the arguments of {@code main}
     * @return the child's output lines (stdout and stderr), after checking that it exited with 0
     */
    public static List<String> run(Class<?> main, Map<String, String> environment, List<String> jvmOptions,
            String... arguments) throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString(), "--enable-native-access=ALL-UNNAMED"));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(arguments));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        // The overrides of the JVM running the tests must not leak into the child.
        builder.environment().remove("GATUN_CUDA_DRIVER");
        builder.environment().remove("GATUN_NVRTC");
        builder.environment().putAll(environment);
        Process p = builder.start();
        byte[] output = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
        List<String> lines = new String(output, StandardCharsets.UTF_8).lines().toList();
        assertEquals(0, p.exitValue(), String.join("\n", lines));
        return lines;
    }

    /** The lines that start with {@code prefix}, in order. */
    public static List<String> withPrefix(List<String> lines, String prefix) {
        return lines.stream().filter(l -> l.startsWith(prefix)).toList();
    }
}
