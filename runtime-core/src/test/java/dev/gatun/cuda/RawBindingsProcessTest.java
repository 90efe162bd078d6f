package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The generated bindings called raw, with Gatun's runtime on the path and no driver: every call
 * throws the runtime's {@link CudaUnavailableException} with the reason Gatun itself gives, on
 * every call, and each copy of Gatun in a class loader or module layer of its own answers from
 * its own loader. In a child JVM (the process's libraries are opened once per class loader),
 * with overrides that name nothing, so that the outcome is the same on a GPU host.
 */
class RawBindingsProcessTest {

    private static final String DRIVER = "-Dgatun.cuda.driver=/nonexistent/libcuda.so.1";
    private static final String NVRTC = "-Dgatun.nvrtc=/nonexistent/libnvrtc.so.13";

    /** Runs in the child JVM: each line is one outcome, for the test to check. */
    public static void main(String[] args) throws Exception {
        // Before anything opened a library: the header classes, constants and descriptors.
        System.out.println("constants " + CudaDriver.CUDA_VERSION() + " " + Nvrtc.NVRTC_ERROR_COMPILATION() + " "
                + CudaDriver.cuDriverGetVersion$descriptor().argumentLayouts().size());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            for (int call = 0; call < 2; call++) {
                System.out.println("raw driver:" + outcome(() -> CudaDriver.cuDriverGetVersion(out)));
                System.out.println("raw nvrtc:" + outcome(() -> Nvrtc.nvrtcVersion(out, out)));
            }
            System.out.println("raw address:" + outcome(CudaDriver::cuDriverGetVersion$address));
        }
        System.out.println("gatun driver:" + outcome(Cuda::system));
        System.out.println("gatun nvrtc:" + outcome(NvrtcLibrary::system));
        isolatedCopies();
    }

    /**
     * Two class-path copies of Gatun, each made while the driver override names another file,
     * then a module layer's copy: each reports the file its own runtime was told of, with its
     * own exception class, so each copy of the bindings found its own runtime's provider.
     */
    private static void isolatedCopies() throws Exception {
        URL[] gatun = {codeSource(Cuda.class), codeSource(CudaDriver.class), codeSource(LoggerFactory.class),
                codeSource(LoggerFactory.getILoggerFactory().getClass())};
        try (URLClassLoader first = new URLClassLoader("first", gatun, ClassLoader.getPlatformClassLoader());
                URLClassLoader second = new URLClassLoader("second", gatun, ClassLoader.getPlatformClassLoader())) {
            System.setProperty("gatun.cuda.driver", "/nonexistent/first/libcuda.so.1");
            System.out.println("copy first:" + rawCall(first));
            System.setProperty("gatun.cuda.driver", "/nonexistent/second/libcuda.so.1");
            System.out.println("copy second:" + rawCall(second));
            System.out.println("copy first again:" + rawCall(first));
        }
        System.setProperty("gatun.cuda.driver", "/nonexistent/layer/libcuda.so.1");
        ModuleFinder modules = ModuleFinder.of(path(Cuda.class), path(CudaDriver.class), path(LoggerFactory.class));
        Configuration configuration = ModuleLayer.boot().configuration().resolve(modules, ModuleFinder.of(),
                Set.of("dev.gatun.cuda"));
        ModuleLayer.Controller layer = ModuleLayer.defineModulesWithOneLoader(configuration,
                List.of(ModuleLayer.boot()), ClassLoader.getPlatformClassLoader());
        for (String module : List.of("dev.gatun.cuda", "dev.gatun.cuda.bindings")) {
            layer.enableNativeAccess(layer.layer().findModule(module).orElseThrow());
        }
        System.out.println("copy layer:" + rawCall(layer.layer().findLoader("dev.gatun.cuda.bindings")));
    }

    /** cuDriverGetVersion through the bindings of the copy in {@code loader}: whose exception, and its message. */
    private static String rawCall(ClassLoader loader) throws ReflectiveOperationException {
        Class<?> bindings = Class.forName("dev.gatun.cuda.bindings.driver.CudaDriver", true, loader);
        // As javac links CudaDriver.cuDriverGetVersion: through the public header class, not the
        // package-private superclass jextract declares it in (which reflection would refuse).
        MethodHandle call = MethodHandles.publicLookup().findStatic(bindings, "cuDriverGetVersion",
                MethodType.methodType(int.class, MemorySegment.class));
        try {
            return "returned " + call.invokeWithArguments(Arena.ofAuto().allocate(ValueLayout.JAVA_INT));
        } catch (Throwable t) {
            String owner = t.getClass().getClassLoader() == loader ? "own" : "foreign";
            return owner + " " + describe(t);
        }
    }

    private static URL codeSource(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    private static Path path(Class<?> c) throws URISyntaxException {
        return Path.of(codeSource(c).toURI());
    }

    /** What a call returned or threw, on one line. */
    private static String outcome(Callable<?> call) {
        try {
            return "returned " + call.call();
        } catch (Throwable t) {
            return describe(t);
        }
    }

    /** The exception's type and message on one line, then its causes' types. */
    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder(t.getClass().getSimpleName()).append(':')
                .append(String.valueOf(t.getMessage()).replace('\n', '|'));
        for (Throwable c = t.getCause(); c != null; c = c.getCause()) {
            sb.append("|caused by ").append(c);
        }
        return sb.toString();
    }

    /** The child's lines: one run serves both tests. */
    private static List<String> lines;

    private static synchronized List<String> child() throws IOException, InterruptedException {
        if (lines == null) {
            lines = ChildJvm.run(RawBindingsProcessTest.class, Map.of(), List.of(DRIVER, NVRTC));
        }
        return lines;
    }

    private static String only(List<String> lines, String prefix) {
        List<String> found = ChildJvm.withPrefix(lines, prefix);
        assertEquals(1, found.size(), prefix + " in\n" + String.join("\n", lines));
        return found.getFirst().substring(prefix.length());
    }

    @Test
    void rawCallsWithoutALibraryThrowGatunsExceptionWithItsReasonOnEveryCall() throws IOException, InterruptedException {
        List<String> lines = child();
        String all = String.join("\n", lines);
        assertEquals("13000 6 1", only(lines, "constants "), all);
        for (String library : List.of("driver", "nvrtc")) {
            List<String> raw = ChildJvm.withPrefix(lines, "raw " + library + ":");
            assertEquals(2, raw.size(), all);
            assertEquals(raw.get(0), raw.get(1), "the same on the second call: " + all);
            String gatun = only(lines, "gatun " + library + ":");
            assertEquals(gatun, raw.get(0).substring(("raw " + library + ":").length()), "Gatun's own diagnosis");
            assertTrue(gatun.startsWith("CudaUnavailableException:"), gatun);
            assertFalse(gatun.contains("Error"), "no Error, as exception or cause: " + gatun);
        }
        String driver = only(lines, "gatun driver:");
        assertTrue(driver.contains("/nonexistent/libcuda.so.1 does not exist"), "the loader's reason: " + driver);
        assertEquals(driver, only(lines, "raw address:"));
    }

    @Test
    void eachCopyOfGatunAnswersRawCallsFromItsOwnRuntime() throws IOException, InterruptedException {
        List<String> lines = child();
        for (String copy : List.of("first", "second", "first again", "layer")) {
            String outcome = only(lines, "copy " + copy + ":");
            assertTrue(outcome.startsWith("own CudaUnavailableException:"), copy + ": " + outcome);
            String file = "/nonexistent/" + copy.replace(" again", "") + "/libcuda.so.1 does not exist";
            assertTrue(outcome.contains(file), copy + ": " + outcome);
        }
    }
}
