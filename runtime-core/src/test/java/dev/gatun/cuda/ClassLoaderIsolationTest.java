package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Two class loaders of one JVM (two web applications, a test framework's isolated loader) each
 * load Gatun and ask for the driver and NVRTC. Each must get its own answer: a native library
 * may be registered with System.load by one class loader only, so nothing here may depend on it.
 * Run in a child JVM, whose system properties can be changed between rounds.
 */
class ClassLoaderIsolationTest {

    /** Runs in the child JVM: {@code args[0]} is a real library that is not CUDA. */
    public static void main(String[] args) throws Exception {
        URL[] gatun = {codeSource(Cuda.class), codeSource(CudaDriver.class), codeSource(LoggerFactory.class),
                codeSource(LoggerFactory.getILoggerFactory().getClass())};
        round("search", gatun);
        System.setProperty("gatun.cuda.driver", args[0]);
        System.setProperty("gatun.nvrtc", args[0]);
        round("override", gatun);
    }

    private static URL codeSource(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    /** Loads Gatun twice, each copy isolated from the other and from this class path, and asks both. */
    private static void round(String round, URL[] gatun) throws Exception {
        try (URLClassLoader first = new URLClassLoader("first", gatun, ClassLoader.getPlatformClassLoader());
                URLClassLoader second = new URLClassLoader("second", gatun, ClassLoader.getPlatformClassLoader())) {
            for (URLClassLoader loader : List.of(first, second)) {
                Class<?> cuda = Class.forName("dev.gatun.cuda.Cuda", true, loader);
                Class<?> nvrtc = Class.forName("dev.gatun.cuda.nvrtc.NvrtcLibrary", true, loader);
                if (cuda.getClassLoader() != loader || cuda == Cuda.class) {
                    throw new AssertionError("Gatun was not isolated in " + loader);
                }
                System.out.println(round + " " + loader.getName() + " driver:" + outcome(cuda));
                System.out.println(round + " " + loader.getName() + " nvrtc:" + outcome(nvrtc));
            }
        }
    }

    /** "available", or the exception's class and message on one line. */
    private static String outcome(Class<?> entryPoint) throws ReflectiveOperationException {
        try {
            entryPoint.getMethod("system").invoke(null);
            return "available";
        } catch (InvocationTargetException e) {
            Throwable t = e.getCause();
            return t.getClass().getName() + ":" + String.valueOf(t.getMessage()).replace('\n', '|');
        }
    }

    @Test
    void everyClassLoaderGetsItsOwnTypedAnswerFromTheSameLibraries() throws IOException, InterruptedException {
        Optional<Path> zlib = ForeignLibrary.zlib();
        assumeTrue(zlib.isPresent(), "no libz.so.1 on this machine");
        List<String> lines = ChildJvm.run(ClassLoaderIsolationTest.class, Map.of(), List.of(), zlib.get().toString());
        String all = String.join("\n", lines);
        for (String library : List.of("driver", "nvrtc")) {
            // Without an override: whatever this machine has, both loaders get the same answer.
            List<String> search = ChildJvm.withPrefix(lines, "search ").stream()
                    .filter(l -> l.contains(" " + library + ":")).toList();
            assertEquals(2, search.size(), all);
            String answer = search.get(0).substring(search.get(0).indexOf(':') + 1);
            assertEquals(answer, search.get(1).substring(search.get(1).indexOf(':') + 1), all);
            assertTrue(answer.equals("available") || answer.startsWith("dev.gatun.cuda.CudaUnavailableException:"), all);
            assertFalse(answer.contains("another classloader"), all);
        }
        // The override makes both loaders really load one library, and each must probe it itself.
        for (String loader : List.of("first", "second")) {
            String driver = ChildJvm.withPrefix(lines, "override " + loader + " driver:").getFirst();
            assertTrue(driver.startsWith("override " + loader + " driver:dev.gatun.cuda.CudaUnavailableException:"), all);
            assertTrue(driver.contains(zlib.get() + " is not the CUDA driver: it has no cuInit"), all);
            String nvrtc = ChildJvm.withPrefix(lines, "override " + loader + " nvrtc:").getFirst();
            assertTrue(nvrtc.startsWith("override " + loader + " nvrtc:dev.gatun.cuda.CudaUnavailableException:"), all);
            assertTrue(nvrtc.contains(zlib.get() + " is not NVRTC: it has no nvrtcVersion"), all);
        }
    }
}
