package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CUipcMemHandle_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.load.Downcalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Structs passed by value: jextract gives them the carrier of a pointer, so {@link Downcalls}
 * must be told them ({@link ByValueStructs#DRIVER}). The first test reads the generated prototypes of
 * every function in driver.functions and requires the table to name exactly their by-value
 * parameters; the second calls through a handle into an upcall that takes the struct by value,
 * and checks the callee received the struct's bytes, not an address.
 */
class ByValueStructsTest {

    private static final Path GENERATED = Path.of("../cuda-bindings/src/main/generated/dev/gatun/cuda/bindings/driver");
    private static byte[] received;

    @Test
    void theTableNamesEveryStructPassedByValueInTheFunctionsGatunCalls() throws IOException {
        StringBuilder sources = new StringBuilder();
        try (Stream<Path> files = Files.list(GENERATED)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("CudaDriver")).toList()) {
                sources.append(Files.readString(f));
            }
        }
        Map<String, Map<Integer, String>> found = new TreeMap<>();
        // Each function's prototype is its binding's (its own, but for a `like` line in driver.functions).
        List<String> functions = Arrays.stream(DriverFunction.values()).map(DriverFunction::binding).distinct().toList();
        for (String function : functions) {
            Matcher m = Pattern.compile("private static class " + Pattern.quote(function)
                    + " \\{\\s*public static final FunctionDescriptor DESC = FunctionDescriptor\\.(of|ofVoid)\\((.*?)\\);",
                    Pattern.DOTALL).matcher(sources);
            assertTrue(m.find(), "no generated prototype for " + function);
            String[] parts = m.group(2).split(",");
            int first = m.group(1).equals("of") ? 1 : 0; // `of` lists the return layout first
            for (int i = first; i < parts.length; i++) {
                String layout = parts[i].strip();
                if (!layout.startsWith("CudaDriver.C_")) {
                    found.computeIfAbsent(function, k -> new HashMap<>()).put(i - first,
                            layout.replace(".layout()", ""));
                }
            }
        }
        Map<String, Map<Integer, String>> table = new TreeMap<>();
        ByValueStructs.DRIVER.forEach((function, parameters) -> parameters.forEach((index, layout) ->
                table.computeIfAbsent(function, k -> new HashMap<>()).put(index, layout.name().orElse("?"))));
        assertEquals(found, table, "ByValueStructs.DRIVER against the generated prototypes (struct layouts by name)");
    }

    @Test
    void aStructParameterReachesTheCalleeByValue() throws Throwable {
        MemoryLayout handle = CUipcMemHandle_st.layout();
        FunctionDescriptor prototype = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, handle,
                ValueLayout.JAVA_INT);
        MethodHandle target = MethodHandles.lookup().findStatic(ByValueStructsTest.class, "receive",
                MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class, int.class));
        try (Arena arena = Arena.ofConfined()) {
            // Safety: the stub's prototype is the C prototype of cuIpcOpenMemHandle_v2, and the
            // handle below calls it with arguments of that prototype only.
            MemorySegment stub = Linker.nativeLinker().upcallStub(target, prototype, arena);
            MethodHandle open = new Downcalls(CudaDriver.class, name -> Optional.of(stub), "an upcall",
                    ByValueStructs.DRIVER).link("cuIpcOpenMemHandle_v2", stub);
            byte[] bytes = new byte[(int) handle.byteSize()];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) (i * 7 + 3);
            }
            MemorySegment value = arena.allocate(handle);
            MemorySegment.copy(bytes, 0, value, ValueLayout.JAVA_BYTE, 0, bytes.length);
            int r = (int) open.invokeExact(arena.allocate(8), value, 1);
            assertEquals(0, r);
            assertArrayEquals(bytes, received, "the callee got the struct's 64 bytes");
        }
    }

    /** The upcall: keeps the bytes of the struct it was passed by value. */
    static int receive(MemorySegment out, MemorySegment handle, int flags) {
        received = handle.toArray(ValueLayout.JAVA_BYTE);
        return 0;
    }
}
