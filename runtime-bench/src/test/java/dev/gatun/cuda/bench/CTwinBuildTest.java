package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * twins.c as compare builds it, without a GPU: it compiles against the CUDA headers with and
 * without cuBLAS's, names no cuBLAS symbol (cuBLAS is no link dependency of the other rows), and a
 * GEMM row where cuBLAS cannot be loaded prints a SKIP line and exits 0, as a process of its own
 * and inside the same-process runner, before any driver call (this machine has no driver: both
 * are linked against a stand-in whose every function fails, so a driver call shows as a failure).
 *
 * <p>Needs gcc and {@code cuda.h} ({@code $CUDA_HOME/include} or {@code /usr/local/cuda/include});
 * cuBLAS's headers are looked for there, then in {@code -Dgatun.test.cublasHeaders=DIR}, then in
 * {@code /work/cuda-lib-headers} (the development machines' copy). A test whose tools are missing
 * is skipped, saying which.
 */
class CTwinBuildTest {

    private static final Path TWINS = Path.of("src/c/twins.c").toAbsolutePath();
    private static final List<String> WARNINGS = List.of("-Wall", "-Wextra", "-Werror");

    @TempDir
    Path dir;

    @Test
    void twinsCompilesWithoutCublasHeaders() throws Exception {
        Path cuda = cudaInclude();
        Assumptions.assumeFalse(Files.exists(cuda.resolve("cublasLt.h")), cuda + " has cuBLAS's headers too");
        assertEquals("", gcc(flags("-fsyntax-only", "-I" + cuda)));
    }

    @Test
    void twinsCompilesAgainstCublasHeadersAndNamesNoCublasSymbol() throws Exception {
        Path object = dir.resolve("twins.o");
        assertEquals("", gcc(flags("-c", "-o", object.toString(), "-I" + cudaInclude(), "-I" + cublasInclude())));

        String undefined = run(List.of("nm", "-u", object.toString()));
        assertTrue(undefined.contains("dlopen"), undefined);
        assertTrue(undefined.contains("cuLaunchKernel"), undefined);
        assertFalse(undefined.toLowerCase(java.util.Locale.ROOT).contains("cublas"),
                "twins.c must open cuBLAS with dlopen, not link it:\n" + undefined);
    }

    @Test
    void aGemmRowWhereCublasIsMissingPrintsSkipAndExitsZero() throws Exception {
        TwinTest.assumeCublasMissing();
        Path twins = dir.resolve("twins");
        Path stubs = driverStub();
        assertEquals("", gcc(flags("-O2", "-o", twins.toString(), "-I" + cudaInclude(), "-I" + cublasInclude(),
                "-L" + stubs, "-lcudastub", "-ldl", "-Wl,-rpath," + stubs)));
        Path ptx = ptx();

        for (String row : List.of("gemm_lt_64", "gemm_64")) {
            Process p = new ProcessBuilder(twins.toString(), row, "640", ptx.toString()).redirectErrorStream(false).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));

            assertEquals(0, p.exitValue(), err);
            assertTrue(out.startsWith("SKIP c " + row + " cuBLAS missing: libcublasLt.so.13 not found"), out);
            assertEquals(1, out.lines().count(), out);
            assertTrue(err.contains(row + " not run: cuBLAS missing"), err);
            assertFalse(err.contains("failed: "), "no driver call before the skip:\n" + err);
        }
    }

    /**
     * A stand-in driver, {@code libcudastub.so} in a directory of its own, whose every function
     * that twins.c calls returns 999 (CUDA_ERROR_UNKNOWN): linked against it, twins.c runs
     * without a driver, and any driver call it makes fails loudly ({@code twins.c:LINE: CALL
     * failed}, exit 1) instead of crashing. Not named libcuda.so.1, so that loading it into this
     * JVM (the same-process runner) hides nothing from the other tests' driver search.
     */
    private Path driverStub() throws Exception {
        Path object = dir.resolve("for-symbols.o");
        gcc(flags("-c", "-o", object.toString(), "-I" + cudaInclude(), "-I" + cublasInclude()));
        StringBuilder stub = new StringBuilder();
        for (String line : run(List.of("nm", "-u", object.toString())).lines().toList()) {
            String symbol = line.strip().replaceFirst("^U\\s+", "");
            if (symbol.startsWith("cu")) {
                stub.append("int ").append(symbol).append("(void) { return 999; }\n");
            }
        }
        Path source = Files.writeString(dir.resolve("cuda_stub.c"), stub);
        Path stubs = Files.createDirectories(dir.resolve("stubs"));
        run(List.of("gcc", "-shared", "-fPIC", "-o", stubs.resolve("libcudastub.so").toString(), source.toString()));
        return stubs;
    }

    /** A PTX text the runner's checks accept; nothing loads it (the rows stop before any driver call). */
    private Path ptx() throws IOException {
        return Files.writeString(dir.resolve("twins.ptx"), ".version 8.0\n.target sm_90\n.address_size 64\n");
    }

    @Test
    void theSameProcessRunnerReportsTheCTwinsSkipOnceAndRunsNothingElseOfTheRow() throws Exception {
        TwinTest.assumeCublasMissing();
        Path library = dir.resolve("libtwins.so");
        Path stubs = driverStub();
        assertEquals("", gcc(flags("-O2", "-shared", "-fPIC", "-o", library.toString(), "-I" + cudaInclude(),
                "-I" + cublasInclude(), "-L" + stubs, "-lcudastub", "-ldl", "-Wl,-rpath," + stubs)));
        Path ptx = ptx();

        // A JVM of its own, as compare runs it: a driver call the row should not make ends the
        // process (twins.c's CHECK exits), which must fail this test, not end the test JVM.
        // -Dgatun.bench.twins=c: the Java twin needs a driver, which this machine lacks.
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dgatun.bench.twins=c", "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                SameProcess.class.getName(), library.toString(), ptx.toString(), "1", "--slices", "10", "gemm_lt_64",
                "gemm_64");
        Process p = new ProcessBuilder(command).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the runner did not end");

        assertEquals(0, p.exitValue(), err);
        List<String> lines = out.lines().toList();
        assertEquals(2, lines.size(), out + err);
        assertTrue(lines.get(0).startsWith("SKIP c gemm_lt_64 cuBLAS missing: "), lines.toString());
        assertTrue(lines.get(1).startsWith("SKIP c gemm_64 cuBLAS missing: "), lines.toString());
        assertFalse(err.contains("failed: "), "no driver call before the skip:\n" + err);
    }

    private static List<String> flags(String... more) {
        List<String> all = new ArrayList<>(WARNINGS);
        all.add(TWINS.toString());
        all.addAll(List.of(more));
        return all;
    }

    /** gcc's diagnostics, failing the test when it fails; empty when it compiled cleanly. */
    private static String gcc(List<String> arguments) throws Exception {
        List<String> command = new ArrayList<>(List.of("gcc"));
        command.addAll(arguments);
        return run(command);
    }

    /** Runs {@code command}; its output, failing the test when it fails, aborting it when the tool is not installed. */
    static String run(List<String> command) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort(command.get(0) + " is not installed here: " + e.getMessage());
            throw e;
        }
        p.getOutputStream().close();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), String.join(" ", command) + " did not end");
        assertEquals(0, p.exitValue(), String.join(" ", command) + "\n" + output);
        return output;
    }

    private static Path cudaInclude() {
        return Stream.of(Optional.ofNullable(System.getenv("CUDA_HOME")).map(h -> Path.of(h, "include")),
                Optional.of(Path.of("/usr/local/cuda/include"))).flatMap(Optional::stream)
                .filter(d -> Files.exists(d.resolve("cuda.h"))).findFirst()
                .orElseGet(() -> {
                    Assumptions.abort("no cuda.h in $CUDA_HOME/include or /usr/local/cuda/include");
                    return null;
                });
    }

    private static Path cublasInclude() {
        return Stream.of(Optional.ofNullable(System.getenv("CUDA_HOME")).map(h -> Path.of(h, "include")),
                Optional.of(Path.of("/usr/local/cuda/include")),
                Optional.ofNullable(System.getProperty("gatun.test.cublasHeaders")).map(Path::of),
                Optional.of(Path.of("/work/cuda-lib-headers"))).flatMap(Optional::stream)
                .filter(d -> Files.exists(d.resolve("cublasLt.h"))).findFirst()
                .orElseGet(() -> {
                    Assumptions.abort("no cublasLt.h: pass -Dgatun.test.cublasHeaders=DIR (pip's nvidia-cublas has them)");
                    return null;
                });
    }
}
