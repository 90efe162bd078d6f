package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The loader's behaviour without a usable driver, in a fresh JVM (the process's driver is
 * loaded once, so it cannot be reset inside this one). Every override points at something that
 * is not a driver, which makes the outcome the same on every machine, GPU or not.
 */
class NoDriverProcessTest {

    /** Runs in the child JVM: exercises every entry point twice and prints what it saw. */
    public static void main(String[] args) {
        System.out.println("available=" + Cuda.isAvailable() + " nvrtcAvailable=" + NvrtcLibrary.isAvailable());
        for (int i = 0; i < 2; i++) {
            try {
                Cuda.system();
                System.out.println("driver loaded?!");
            } catch (Throwable t) {
                System.out.println("driver:" + describe(t));
            }
            try {
                NvrtcLibrary.system();
                System.out.println("nvrtc loaded?!");
            } catch (Throwable t) {
                System.out.println("nvrtc:" + describe(t));
            }
        }
    }

    /** The exception's type and message on one line, then its causes' types. */
    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder(t.getClass().getSimpleName()).append(':')
                .append(t.getMessage().replace('\n', '|'));
        for (Throwable c = t.getCause(); c != null; c = c.getCause()) {
            sb.append("|caused by ").append(c);
        }
        return sb.toString();
    }

    /** Runs the child and returns the one diagnosis each library got, checked to be the same on every call. */
    private static Map<String, String> diagnoses(Map<String, String> environment, String... jvmOptions)
            throws IOException, InterruptedException {
        List<String> lines = ChildJvm.run(NoDriverProcessTest.class, environment, List.of(jvmOptions));
        String all = String.join("\n", lines);
        // The JVM itself may warn first (it does when asked to load a file that is not ELF).
        assertEquals(List.of("available=false nvrtcAvailable=false"), ChildJvm.withPrefix(lines, "available="), all);
        Map<String, String> diagnoses = new HashMap<>();
        for (String library : List.of("driver", "nvrtc")) {
            List<String> seen = ChildJvm.withPrefix(lines, library + ":");
            assertEquals(2, seen.size(), all);
            assertEquals(seen.get(0), seen.get(1), "the same diagnosis on every call");
            assertTrue(seen.get(0).startsWith(library + ":CudaUnavailableException:"), seen.get(0));
            assertFalse(seen.get(0).contains("Error"), "no Error, as exception or cause: " + seen.get(0));
            diagnoses.put(library, seen.get(0));
        }
        return diagnoses;
    }

    @Test
    void missingOverridesAreNamedWithTheirPropertyAndNoAdviceToSetIt() throws IOException, InterruptedException {
        Map<String, String> d = diagnoses(Map.of(), "-Dgatun.cuda.driver=/nonexistent/libcuda.so.1",
                "-Dgatun.nvrtc=/nonexistent/libnvrtc.so.13");
        String driver = d.get("driver");
        assertTrue(driver.startsWith("driver:CudaUnavailableException:The CUDA driver named by system property "
                + "gatun.cuda.driver could not be loaded"), driver);
        assertTrue(driver.contains("/nonexistent/libcuda.so.1 does not exist"), driver);
        assertFalse(driver.contains("-Dgatun.cuda.driver="), "no advice to set what is set: " + driver);
        assertFalse(driver.contains("GATUN_CUDA_DRIVER"), "the variable played no part: " + driver);
        String nvrtc = d.get("nvrtc");
        assertTrue(nvrtc.startsWith("nvrtc:CudaUnavailableException:NVRTC named by system property gatun.nvrtc "
                + "could not be loaded"), nvrtc);
        assertTrue(nvrtc.contains("/nonexistent/libnvrtc.so.13 does not exist"), nvrtc);
        assertFalse(nvrtc.contains("-Dgatun.nvrtc="), nvrtc);
    }

    @Test
    void anOverrideNamingAnotherLibraryIsReportedAsNotTheDriverOnEveryCall() throws IOException, InterruptedException {
        Optional<Path> zlib = ForeignLibrary.zlib();
        assumeTrue(zlib.isPresent(), "no libz.so.1 on this machine");
        Map<String, String> d = diagnoses(Map.of(), "-Dgatun.cuda.driver=" + zlib.get(), "-Dgatun.nvrtc=" + zlib.get());
        String driver = d.get("driver");
        assertTrue(driver.contains(zlib.get() + " is not the CUDA driver: it has no cuInit"), driver);
        assertTrue(driver.contains("system property gatun.cuda.driver"), driver);
        assertFalse(driver.contains("-Dgatun.cuda.driver="), driver);
        String nvrtc = d.get("nvrtc");
        assertTrue(nvrtc.contains(zlib.get() + " is not NVRTC: it has no nvrtcVersion"), nvrtc);
        assertTrue(nvrtc.contains("system property gatun.nvrtc"), nvrtc);
    }

    @Test
    void environmentOverridesThatFailSayWhatIsWrongWithThePathAndNameTheVariable(@TempDir Path dir)
            throws IOException, InterruptedException {
        Path text = dir.resolve("libnvrtc.so.13");
        Files.writeString(text, "not a shared library, only text long enough to hold an ELF header\n".repeat(4));
        Map<String, String> d = diagnoses(Map.of("GATUN_CUDA_DRIVER", "/nonexistent/libcuda.so.1",
                "GATUN_NVRTC", text.toString()));
        String driver = d.get("driver");
        assertTrue(driver.contains("environment variable GATUN_CUDA_DRIVER"), driver);
        assertTrue(driver.contains("/nonexistent/libcuda.so.1 does not exist"), driver);
        assertFalse(driver.contains("gatun.cuda.driver"), "no advice to set the property: " + driver);
        assertFalse(driver.contains("Install the NVIDIA GPU driver"), "the search was not run: " + driver);
        String nvrtc = d.get("nvrtc");
        assertTrue(nvrtc.contains("environment variable GATUN_NVRTC"), nvrtc);
        assertTrue(nvrtc.contains(text + " is not a loadable shared library: "), nvrtc);
        assertTrue(nvrtc.contains("invalid ELF header"), "dlopen's own reason: " + nvrtc);
        assertFalse(nvrtc.contains("gatun.nvrtc"), nvrtc);
    }
}
