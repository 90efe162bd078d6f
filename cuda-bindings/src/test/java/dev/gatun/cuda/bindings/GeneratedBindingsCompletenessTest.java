package dev.gatun.cuda.bindings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The committed sources must cover every symbol that the committed symbol lists name: a
 * regeneration that silently dropped functions (a clang version that cannot parse a struct,
 * a filtered list) fails here, on a machine with no GPU.
 */
class GeneratedBindingsCompletenessTest {

    @Test
    void everyDriverFunctionInTheSymbolListHasAGeneratedMethod() throws IOException {
        List<String> functions = symbols("driver.symbols", "--include-function");
        assertTrue(functions.size() >= 440, "cuda.h of CUDA 13.0 declares about 450 functions, list has " + functions.size());
        assertEquals(List.of(), missing(functions, publicStaticMethodNames(CudaDriver.class)));
    }

    @Test
    void everyNvrtcFunctionInTheSymbolListHasAGeneratedMethod() throws IOException {
        List<String> functions = symbols("nvrtc.symbols", "--include-function");
        assertTrue(functions.size() >= 20, "nvrtc.h of CUDA 13.0 declares 24 functions, list has " + functions.size());
        assertEquals(List.of(), missing(functions, publicStaticMethodNames(Nvrtc.class)));
    }

    @Test
    void everyConstantInTheSymbolListsHasAGeneratedAccessor() throws IOException {
        assertEquals(List.of(), missing(symbols("driver.symbols", "--include-constant"), publicStaticMethodNames(CudaDriver.class)));
        assertEquals(List.of(), missing(symbols("nvrtc.symbols", "--include-constant"), publicStaticMethodNames(Nvrtc.class)));
    }

    @Test
    void constantsAreUsableWithoutLoadingAnyNativeLibrary() {
        // No -l at generation time: touching the header class must not need libcuda.
        assertEquals(0, CudaDriver.CUDA_SUCCESS());
        assertEquals(700, CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS());
        assertEquals(13000, CudaDriver.CUDA_VERSION());
        assertEquals(6, Nvrtc.NVRTC_ERROR_COMPILATION());
    }

    private static List<String> missing(List<String> wanted, Set<String> present) {
        return wanted.stream().filter(name -> !present.contains(name)).collect(Collectors.toList());
    }

    private static Set<String> publicStaticMethodNames(Class<?> headerClass) {
        // jextract splits a large header class into a chain of superclasses; getMethods sees them all.
        return Arrays.stream(headerClass.getMethods())
                .filter(m -> Modifier.isStatic(m.getModifiers()))
                .map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static List<String> symbols(String file, String kind) throws IOException {
        try (InputStream in = GeneratedBindingsCompletenessTest.class.getResourceAsStream("/jextract/" + file)) {
            assertTrue(in != null, "symbol list " + file + " is not on the test class path");
            List<String> names = new ArrayList<>();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                String[] parts = line.trim().split("\\s+");
                if (parts.length == 2 && parts[0].equals(kind)) {
                    names.add(parts[1]);
                }
            }
            return names;
        }
    }
}
