package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * gcc, for tests that build C against Gatun (an NVTX injection library) or check Gatun's
 * hand-written layouts against the CUDA headers. gcc is on the development machines and on CI:
 * a machine without it fails these tests with what to install, never skips them.
 */
public final class Gcc {

    /** Where the CUDA toolkit's headers are, when they are. */
    public static final Path CUDA_INCLUDE = Path.of("/usr/local/cuda/include");

    private Gcc() {
    }

    /** Runs gcc with {@code arguments}; fails the test with gcc's output when it fails. */
    public static void run(List<String> arguments) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("gcc"));
        command.addAll(arguments);
        Process gcc;
        try {
            gcc = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            fail("this test builds C with gcc, and gcc could not be run (" + e.getMessage()
                    + "): install gcc (apt-get install gcc)");
            return;
        }
        String said = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(gcc.waitFor(120, TimeUnit.SECONDS), "gcc finished");
        assertEquals(0, gcc.exitValue(), String.join(" ", command) + ":\n" + said);
    }

    /** Compiles {@code source} (C text) without linking it: its {@code _Static_assert}s are the check. */
    public static void check(String source, List<String> flags) throws IOException, InterruptedException {
        Path file = Files.createTempFile("gatun-check", ".c");
        try {
            Files.writeString(file, source);
            List<String> arguments = new ArrayList<>(List.of("-fsyntax-only", "-Wall"));
            arguments.addAll(flags);
            arguments.add(file.toString());
            run(arguments);
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
