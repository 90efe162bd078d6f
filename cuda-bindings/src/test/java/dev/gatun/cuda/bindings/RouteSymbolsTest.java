package dev.gatun.cuda.bindings;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The step regenerate runs after jextract ({@code jextract/RouteSymbols.java}) has been applied to
 * the committed sources, turns jextract's output into them, and is idempotent, so that
 * regenerating reproduces the committed files byte for byte.
 */
class RouteSymbolsTest {

    private static final Path GENERATED = Path.of("src/main/generated/dev/gatun/cuda/bindings");
    private static final Path STEP = Path.of("jextract/RouteSymbols.java");

    /** jextract's output for one function (CUDA 13.0's cuda.h), verbatim, with the header class's lookup. */
    private static final String JEXTRACT_OUTPUT = """
                static final SymbolLookup SYMBOL_LOOKUP = SymbolLookup.loaderLookup()
                        .or(Linker.nativeLinker().defaultLookup());

                private static class cuDriverGetVersion {
                    public static final FunctionDescriptor DESC = FunctionDescriptor.of(
                        CudaDriver.C_INT,
                        CudaDriver.C_POINTER
                    );

                    public static final MemorySegment ADDR = SYMBOL_LOOKUP.findOrThrow("cuDriverGetVersion");

                    public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
                }

                public static MemorySegment cuDriverGetVersion$address() {
                    return cuDriverGetVersion.ADDR;
                }
            """;

    private static final String ROUTED_LOOKUP = """
                static final SymbolLookup SYMBOL_LOOKUP = dev.gatun.cuda.bindings.NativeLibrary.DRIVER.lookup();
            """;

    private static final String ROUTED_HOLDER = """
                private static class cuDriverGetVersion {
                    public static final FunctionDescriptor DESC = FunctionDescriptor.of(
                        CudaDriver.C_INT,
                        CudaDriver.C_POINTER
                    );

                    public static final MethodHandle HANDLE = dev.gatun.cuda.bindings.NativeLibrary.DRIVER.downcall("cuDriverGetVersion", DESC);
                }
            """;

    private static final String ROUTED_ADDRESS = """
                public static MemorySegment cuDriverGetVersion$address() {
                    return dev.gatun.cuda.bindings.NativeLibrary.DRIVER.address("cuDriverGetVersion");
                }
            """;

    @Test
    void everyGeneratedFunctionResolvesThroughNativeLibrary() throws IOException {
        assertRouted("driver", "DRIVER", functions("driver.symbols"));
        assertRouted("nvrtc", "NVRTC", functions("nvrtc.symbols"));
    }

    @Test
    void theStepChangesNothingInTheCommittedSources(@TempDir Path copy) throws IOException, InterruptedException {
        for (String library : List.of("driver", "nvrtc")) {
            Path dir = Files.createDirectories(copy.resolve(library));
            List<Path> committed = javaFiles(GENERATED.resolve(library));
            for (Path file : committed) {
                Files.copy(file, dir.resolve(file.getFileName()));
            }
            Outcome outcome = runStep(library.toUpperCase(), dir);
            assertEquals(0, outcome.exit(), outcome.output());
            for (Path file : committed) {
                assertArrayEquals(Files.readAllBytes(file), Files.readAllBytes(dir.resolve(file.getFileName())),
                        file + " changed");
            }
        }
    }

    @Test
    void theStepTurnsJextractsOutputIntoTheCommittedCode(@TempDir Path dir) throws IOException, InterruptedException {
        Path file = dir.resolve("CudaDriver_1.java");
        Files.writeString(file, JEXTRACT_OUTPUT, StandardCharsets.UTF_8);
        Outcome outcome = runStep("DRIVER", dir);
        assertEquals(0, outcome.exit(), outcome.output());
        assertEquals(ROUTED_LOOKUP + "\n" + ROUTED_HOLDER + "\n" + ROUTED_ADDRESS, Files.readString(file));
        // The expected text is what the committed header class holds.
        String committed = Files.readString(GENERATED.resolve("driver/CudaDriver_1.java"));
        for (String routed : List.of(ROUTED_LOOKUP, ROUTED_HOLDER, ROUTED_ADDRESS)) {
            assertTrue(committed.contains(routed), routed);
        }
    }

    @Test
    void aHolderOfAnotherShapeStopsTheStepWithWhereItIs(@TempDir Path dir) throws IOException, InterruptedException {
        // A jextract that wrote ADDR without the HANDLE line after it: the step must not guess.
        String changed = JEXTRACT_OUTPUT.replace(
                "\n        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);", "");
        Path file = dir.resolve("CudaDriver_1.java");
        Files.writeString(file, changed, StandardCharsets.UTF_8);
        Outcome outcome = runStep("DRIVER", dir);
        assertEquals(1, outcome.exit(), outcome.output());
        assertTrue(outcome.output().contains("CudaDriver_1.java:10: an ADDR line outside the holder shape"),
                outcome.output());
        assertEquals(changed, Files.readString(file), "nothing written");
    }

    /** The holders of one package: each function's handle and address go through NativeLibrary, and nothing else remains. */
    private static void assertRouted(String library, String constant, List<String> functions) throws IOException {
        List<String> handles = new ArrayList<>();
        List<String> addresses = new ArrayList<>();
        for (Path file : javaFiles(GENERATED.resolve(library))) {
            String text = Files.readString(file);
            for (String leftover : List.of("loaderLookup", "findOrThrow", "downcallHandle(ADDR", ".ADDR;", " ADDR =")) {
                assertFalse(text.contains(leftover), file + " still has " + leftover);
            }
            handles.addAll(names(text, "public static final MethodHandle HANDLE = dev.gatun.cuda.bindings.NativeLibrary."
                    + constant + ".downcall(\""));
            addresses.addAll(names(text, "return dev.gatun.cuda.bindings.NativeLibrary." + constant + ".address(\""));
            assertEquals(text.split("public static final MethodHandle HANDLE =", -1).length - 1,
                    names(text, "public static final MethodHandle HANDLE = dev.gatun.cuda.bindings.NativeLibrary."
                            + constant + ".downcall(\"").size(), file + ": a HANDLE made another way");
        }
        assertEquals(new TreeSet<>(functions), new TreeSet<>(handles));
        assertEquals(functions.size(), handles.size(), "one handle per function");
        assertEquals(new TreeSet<>(functions), new TreeSet<>(addresses));
        assertEquals(functions.size(), addresses.size(), "one address accessor per function");
    }

    private static List<String> names(String text, String prefix) {
        Matcher m = Pattern.compile(Pattern.quote(prefix) + "(\\w+)\"").matcher(text);
        List<String> found = new ArrayList<>();
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }

    private static List<String> functions(String symbols) throws IOException {
        return Files.readAllLines(Path.of("jextract", symbols)).stream().filter(l -> l.startsWith("--include-function "))
                .map(l -> l.substring("--include-function ".length()).trim()).toList();
    }

    private static List<Path> javaFiles(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
    }

    private record Outcome(int exit, String output) {
    }

    private static Outcome runStep(String library, Path dir) throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), STEP.toString(), library, dir.toString())
                .redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the step finished");
        return new Outcome(p.exitValue(), output);
    }
}
