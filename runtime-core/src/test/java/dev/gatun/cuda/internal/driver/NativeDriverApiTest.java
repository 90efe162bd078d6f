package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.ZeroArguments;
import java.io.IOException;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The driver's downcall handles, built without a driver: over a library that exports nothing,
 * every method must reach its own function's handle with the generated signature (a handle of
 * another type would fail invokeExact with WrongMethodTypeException).
 */
class NativeDriverApiTest {

    @Test
    void everyMethodCallsItsOwnFunctionWithTheGeneratedSignature() throws IOException {
        NativeDriverApi api = new NativeDriverApi(name -> Optional.empty(), "/nowhere/libcuda.so.1");
        int checked = 0;
        for (Method m : DriverApi.class.getMethods()) {
            if (m.getName().equals("hasSymbol")) {
                continue;
            }
            InvocationTargetException e = assertThrows(InvocationTargetException.class,
                    () -> m.invoke(api, ZeroArguments.of(m)), m.getName());
            IllegalStateException missing = assertInstanceOf(IllegalStateException.class, e.getCause(), m.getName());
            assertTrue(missing.getMessage().startsWith(m.getName() + " is not exported by /nowhere/libcuda.so.1"),
                    missing.getMessage());
            checked++;
        }
        long listed = Files.readAllLines(Path.of("..", "cuda-bindings", "jextract", "driver.functions")).stream()
                .map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).count();
        assertEquals(listed, checked, "every function of driver.functions");
        assertFalse(api.hasSymbol("cuInit"));
    }

    @Test
    void eachInstanceCallsItsOwnLibrarysFunctionsWhicheverBoundTheStaticCallSites() {
        // The first instance of the class loader calls through the static call sites, later ones
        // through their own handles; both must reach the library they were made for.
        NativeDriverApi first = new NativeDriverApi(name -> Optional.empty(), "/first/libcuda.so.1");
        NativeDriverApi second = new NativeDriverApi(name -> Optional.empty(), "/second/libcuda.so.1");
        for (int round = 0; round < 2; round++) {
            IllegalStateException a = assertThrows(IllegalStateException.class, () -> first.cuInit(0));
            assertTrue(a.getMessage().startsWith("cuInit is not exported by /first/libcuda.so.1"), a.getMessage());
            IllegalStateException b = assertThrows(IllegalStateException.class, () -> second.cuDriverGetVersion(
                    MemorySegment.NULL));
            assertTrue(b.getMessage().startsWith("cuDriverGetVersion is not exported by /second/libcuda.so.1"),
                    b.getMessage());
        }
    }

    @Test
    void theLinkerAcceptsEveryDescriptorReadOffTheBindings() {
        // Every name resolves to one real function, never called: only the handles are built.
        MemorySegment strlen = Linker.nativeLinker().defaultLookup().find("strlen").orElseThrow();
        NativeDriverApi api = new NativeDriverApi(name -> Optional.of(strlen), "libc");
        assertTrue(api.hasSymbol("cuLaunchKernel"));
    }
}
