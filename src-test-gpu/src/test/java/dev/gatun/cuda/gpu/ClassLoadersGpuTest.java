package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.slf4j.LoggerFactory;

/**
 * Two class loaders of one JVM (two web applications, a test framework's isolated loader) each
 * load their own copy of Gatun and use the GPU at the same time as this suite's own copy. The
 * driver and NVRTC are mapped once per process; each copy must still resolve its own downcalls.
 * (With System.load, the second copy got "already loaded in another classloader".)
 */
@RequiresGpu
class ClassLoadersGpuTest {

    private static final int POISON = 0xDEADBEEF;

    /** Gatun's jars (or class folders) as this suite runs them: lib/ in the bundle, the reactor under Maven. */
    private static URL[] gatunClassPath() {
        return new URL[] {codeSource(Cuda.class), codeSource(CudaDriver.class), codeSource(LoggerFactory.class),
                codeSource(LoggerFactory.getILoggerFactory().getClass())};
    }

    private static URL codeSource(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    /** One copy of Gatun in a class loader of its own, reached through its public API by reflection. */
    private static final class IsolatedGatun implements AutoCloseable {
        private final URLClassLoader loader;
        private final Object context;

        IsolatedGatun(String name) throws ReflectiveOperationException {
            loader = new URLClassLoader(name, gatunClassPath(), ClassLoader.getPlatformClassLoader());
            Object device = call(type("dev.gatun.cuda.Cuda"), "device", cuda(), 0);
            context = call(type("dev.gatun.cuda.Device"), "context", device);
        }

        Class<?> type(String name) throws ClassNotFoundException {
            return Class.forName(name, true, loader);
        }

        Object cuda() throws ReflectiveOperationException {
            return type("dev.gatun.cuda.Cuda").getMethod("system").invoke(null);
        }

        String driverLibrary() throws ReflectiveOperationException {
            return (String) call(type("dev.gatun.cuda.Cuda"), "driverLibrary", cuda());
        }

        String nvrtcVersion() throws ReflectiveOperationException {
            Class<?> nvrtc = type("dev.gatun.cuda.nvrtc.NvrtcLibrary");
            return (String) call(nvrtc, "version", nvrtc.getMethod("system").invoke(null));
        }

        /** A device buffer of {@code ints} elements; close it as the AutoCloseable it is. */
        AutoCloseable allocateInts(int ints) throws ReflectiveOperationException {
            return (AutoCloseable) type("dev.gatun.cuda.CudaContext").getMethod("allocate", long.class)
                    .invoke(context, 4L * ints);
        }

        void upload(AutoCloseable buffer, int[] data) throws ReflectiveOperationException {
            type("dev.gatun.cuda.DeviceView").getMethod("copyFrom", int[].class).invoke(ints(buffer), data);
        }

        void download(AutoCloseable buffer, int[] out) throws ReflectiveOperationException {
            type("dev.gatun.cuda.DeviceView").getMethod("copyTo", int[].class).invoke(ints(buffer), out);
        }

        private Object ints(AutoCloseable buffer) throws ReflectiveOperationException {
            return call(type("dev.gatun.cuda.DeviceBuffer"), "asInts", buffer);
        }

        private static Object call(Class<?> type, String method, Object target, Object... args)
                throws ReflectiveOperationException {
            Class<?>[] parameters = Arrays.stream(args).map(a -> a instanceof Integer ? int.class : a.getClass())
                    .toArray(Class<?>[]::new);
            return type.getMethod(method, parameters).invoke(target, args);
        }

        @Override
        public void close() throws Exception {
            loader.close();
        }
    }

    @Test
    void twoClassLoadersEachLoadGatunAndCopyThroughDevice0AtOnce(TestReporter reporter) throws Exception {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = (1 << 20) + 3;
        int[] first = random.ints(n).toArray();
        int[] second = random.ints(n).toArray();
        try (IsolatedGatun a = new IsolatedGatun("first"); IsolatedGatun b = new IsolatedGatun("second")) {
            Class<?> cudaA = a.type("dev.gatun.cuda.Cuda");
            assertNotSame(cudaA, b.type("dev.gatun.cuda.Cuda"), "each loader has its own Gatun");
            assertNotSame(Cuda.class, cudaA, "and neither is this suite's");
            // Every copy searched the same places and opened the same driver and NVRTC.
            assertEquals(Cuda.system().driverLibrary(), a.driverLibrary());
            assertEquals(Cuda.system().driverLibrary(), b.driverLibrary());
            assertEquals(NvrtcLibrary.system().version(), a.nvrtcVersion());
            assertEquals(NvrtcLibrary.system().version(), b.nvrtcVersion());
            reporter.publishEntry("driver", a.driverLibrary());

            try (AutoCloseable bufferA = a.allocateInts(n); AutoCloseable bufferB = b.allocateInts(n)) {
                a.upload(bufferA, first);
                b.upload(bufferB, second);
                int[] outA = new int[n];
                int[] outB = new int[n];
                Arrays.fill(outA, POISON);
                Arrays.fill(outB, POISON);
                b.download(bufferB, outB);
                a.download(bufferA, outA);
                assertArrayEquals(first, outA, "first loader, n=" + n + " seed=" + seed);
                assertArrayEquals(second, outB, "second loader, n=" + n + " seed=" + seed);
            }
        }
    }
}
