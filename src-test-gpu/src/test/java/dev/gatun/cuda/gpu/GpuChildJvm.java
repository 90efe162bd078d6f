package dev.gatun.cuda.gpu;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Runs a test class's {@code main} in a fresh JVM on this suite's class path, for GPU work that
 * must not share the process with the other tests: a deliberate sticky fault poisons the
 * device's primary context for the rest of its process. The output goes to a file, so a child
 * that hangs is ended after the limit instead of blocking the reader.
 */
final class GpuChildJvm {

    /**
     * @param exitValue the child's exit status, or -1 when it was ended after the limit
     * @param output its stdout and stderr together
     */
    record Result(int exitValue, String output) {

        List<String> lines() {
            return output.lines().toList();
        }

        /** The first line that starts with {@code prefix}, or "" when there is none. */
        String line(String prefix) {
            return lines().stream().filter(l -> l.startsWith(prefix)).findFirst().orElse("");
        }
    }

    private GpuChildJvm() {
    }

    /**
     * @param directory the child's working directory
     * @param environment changes the child's environment variables (a copy of this JVM's)
     * @param jvmOptions options before the class name, such as system properties
     */
    static Result run(Class<?> main, Path directory, Consumer<Map<String, String>> environment, List<String> jvmOptions,
            Duration limit, String... arguments) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED"));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", absoluteClassPath(), main.getName()));
        command.addAll(List.of(arguments));
        Path log = Files.createTempFile("gatun-child", ".log");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            environment.accept(builder.environment());
            Process p = builder.start();
            boolean finished = p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                p.destroyForcibly().waitFor();
            }
            return new Result(finished ? p.exitValue() : -1, Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** This JVM's class path with every entry made absolute: the bundle's is relative ({@code lib/...}), and the child may run elsewhere. */
    private static String absoluteClassPath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .map(entry -> Path.of(entry).toAbsolutePath().toString())
                .collect(Collectors.joining(File.pathSeparator));
    }
}
