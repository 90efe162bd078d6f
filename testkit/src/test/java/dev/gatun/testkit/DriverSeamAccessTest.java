package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.platform.commons.annotation.Testable;
import org.opentest4j.AssertionFailedError;
import org.slf4j.Logger;

/**
 * gatun-testkit on the module path, as module layers built here from the build's own classes lay
 * it out. As a named module beside gatun-core it reaches the driver seam that gatun-core exports to
 * it alone, and the simulator runs. On the class path over gatun-core as a named module (what
 * Surefire gives a project whose only module-info.java is its main code's) it cannot, and says so,
 * instead of the simulator's IllegalAccessError.
 */
class DriverSeamAccessTest {

    @Test
    void asModuleDevGatunTestkitTheSimulatorRunsBesideGatunCore() throws Exception {
        Configuration modules = ModuleLayer.boot().configuration().resolve(
                ModuleFinder.of(location(Cuda.class), location(CudaDriver.class), location(Logger.class),
                        location(SimulatedGpu.class), location(Test.class), location(AssertionFailedError.class),
                        location(Testable.class)),
                ModuleFinder.of(), Set.of("dev.gatun.testkit"));
        ModuleLayer.Controller controller = ModuleLayer.defineModulesWithOneLoader(modules, List.of(ModuleLayer.boot()),
                ClassLoader.getPlatformClassLoader());
        ModuleLayer layer = controller.layer();
        // As --enable-native-access does for them on a module path (the simulator reads its device
        // memory through java.lang.foreign too); this JVM grants the class path the same.
        layer.modules().forEach(controller::enableNativeAccess);
        Class<?> simulatedGpu = layer.findLoader("dev.gatun.testkit").loadClass(SimulatedGpu.class.getName());
        Method context = simulatedGpu.getMethod("context");
        Method allocate = context.getReturnType().getMethod("allocate", long.class);
        assertEquals("dev.gatun.testkit", simulatedGpu.getModule().getName());
        assertEquals("dev.gatun.cuda", context.getReturnType().getModule().getName());

        try (AutoCloseable gpu = (AutoCloseable) simulatedGpu.getConstructor().newInstance()) {
            Object ctx = context.invoke(gpu);
            try (AutoCloseable buffer = (AutoCloseable) allocate.invoke(ctx, 4096L)) {
                assertEquals(4096L, allocate.getReturnType().getMethod("byteSize").invoke(buffer));
            }
        } // the close checks that the simulated device holds nothing, as in any test
    }

    @Test
    void aSimulatedGpuOnTheClassPathOverGatunCoreOnTheModulePathSaysWhatToDo() throws Exception {
        Configuration modules = ModuleLayer.boot().configuration().resolve(
                ModuleFinder.of(location(Cuda.class), location(CudaDriver.class), location(Logger.class)),
                ModuleFinder.of(), Set.of("dev.gatun.cuda"));
        ModuleLayer layer = ModuleLayer.boot().defineModulesWithOneLoader(modules, ClassLoader.getPlatformClassLoader());
        try (URLClassLoader classPath = new URLClassLoader(new URL[] {location(SimulatedGpu.class).toUri().toURL()},
                layer.findLoader("dev.gatun.cuda"))) {
            Class<?> simulatedGpu = classPath.loadClass(SimulatedGpu.class.getName());
            Class<?> cuda = classPath.loadClass(Cuda.class.getName());
            assertNull(simulatedGpu.getModule().getName(), "the testkit is on the class path");
            assertEquals("dev.gatun.cuda", cuda.getModule().getName(), "gatun-core is a named module");

            InvocationTargetException thrown = assertThrows(InvocationTargetException.class,
                    () -> simulatedGpu.getConstructor().newInstance());
            IllegalStateException e = assertInstanceOf(IllegalStateException.class, thrown.getCause());
            assertTrue(e.getMessage().startsWith("gatun-testkit is on the class path, but gatun-core is on the module "
                    + "path (module dev.gatun.cuda), which lets module dev.gatun.testkit alone reach its driver seam."),
                    e.getMessage());
            assertTrue(e.getMessage().contains("'requires dev.gatun.testkit;'"), e.getMessage());
            assertTrue(e.getMessage().contains("'--add-exports dev.gatun.cuda/dev.gatun.cuda.internal.driver=ALL-UNNAMED "
                    + "--add-opens dev.gatun.cuda/dev.gatun.cuda=ALL-UNNAMED'"), e.getMessage());
            assertTrue(e.getMessage().contains("<useModulePath>false</useModulePath>"), e.getMessage());
        }
    }

    /** The folder or jar {@code type} was loaded from (a build's classes, or a jar in the local repository). */
    private static Path location(Class<?> type) throws URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }
}
