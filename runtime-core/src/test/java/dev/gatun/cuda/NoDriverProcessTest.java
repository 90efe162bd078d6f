package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The loader's behaviour without a driver, in a fresh JVM (the process's driver is loaded
 * once, so it cannot be reset inside this one). The override points at a file that does not
 * exist, which makes the outcome the same on every machine, GPU or not.
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
                System.out.println("driver:" + t.getClass().getSimpleName() + ":" + t.getMessage().replace('\n', '|'));
            }
            try {
                NvrtcLibrary.system();
                System.out.println("nvrtc loaded?!");
            } catch (Throwable t) {
                System.out.println("nvrtc:" + t.getClass().getSimpleName() + ":" + t.getMessage().replace('\n', '|'));
            }
        }
    }

    @Test
    void withoutADriverEveryCallGetsTheSameTypedExceptionAndNeverAnError() throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "--enable-native-access=ALL-UNNAMED",
                "-Dgatun.cuda.driver=/nonexistent/libcuda.so.1", "-Dgatun.nvrtc=/nonexistent/libnvrtc.so.13",
                "-cp", System.getProperty("java.class.path"), NoDriverProcessTest.class.getName())
                .redirectErrorStream(true).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
        List<String> lines = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        assertEquals(0, p.exitValue(), String.join("\n", lines));
        assertEquals("available=false nvrtcAvailable=false", lines.get(0));
        List<String> driver = lines.stream().filter(l -> l.startsWith("driver:")).toList();
        List<String> nvrtc = lines.stream().filter(l -> l.startsWith("nvrtc:")).toList();
        assertEquals(2, driver.size(), String.join("\n", lines));
        assertEquals(driver.get(0), driver.get(1), "the same diagnosis on every call");
        assertTrue(driver.get(0).startsWith("driver:CudaUnavailableException:No CUDA driver could be loaded."), driver.get(0));
        assertTrue(driver.get(0).contains("/nonexistent/libcuda.so.1: no such file"), driver.get(0));
        assertTrue(driver.get(0).contains("GATUN_CUDA_DRIVER"), driver.get(0));
        assertEquals(2, nvrtc.size());
        assertTrue(nvrtc.get(1).startsWith("nvrtc:CudaUnavailableException:No NVRTC could be loaded."), nvrtc.get(1));
        assertTrue(nvrtc.get(1).contains("/nonexistent/libnvrtc.so.13: no such file"), nvrtc.get(1));
    }
}
