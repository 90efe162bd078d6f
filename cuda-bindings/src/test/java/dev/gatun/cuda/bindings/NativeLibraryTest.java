package dev.gatun.cuda.bindings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The handles of the generated functions: made without touching a library, bound on their first
 * call, throwing from every call that cannot be made. The C library stands in for the driver.
 * This module's tests have no runtime on the class path, so the generated classes here open
 * the libraries by soname.
 */
class NativeLibraryTest {

    private static final NativeLibrary.Opened LIBC = new NativeLibrary.Opened(Linker.nativeLinker().defaultLookup(),
            "the C library (test)");
    private static final FunctionDescriptor STRLEN = FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);

    /** Counts how often the library is asked for. */
    private static final class Counting implements Supplier<NativeLibrary.Opened> {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public NativeLibrary.Opened get() {
            calls.incrementAndGet();
            return LIBC;
        }
    }

    @Test
    void aHandleOpensItsLibraryOnItsFirstCallOnlyAndThenCallsTheFunction() throws Throwable {
        Counting library = new Counting();
        MethodHandle strlen = NativeLibrary.downcall(library, "strlen", STRLEN);
        assertEquals(MethodType.methodType(long.class, MemorySegment.class), strlen.type());
        assertEquals(0, library.calls.get(), "making the handle touches no library");
        try (Arena arena = Arena.ofConfined()) {
            // Safety: strlen reads the NUL-terminated string, which lives in the arena for the call.
            assertEquals(5L, (long) strlen.invokeExact(arena.allocateFrom("gatun")));
            assertEquals(11L, (long) strlen.invokeExact(arena.allocateFrom("cuda driver")));
        }
        assertEquals(1, library.calls.get(), "bound by the first call");
    }

    @Test
    void aStructReturnedByValueTakesItsAllocatorFirst() throws Throwable {
        MemoryLayout divT = MemoryLayout.structLayout(ValueLayout.JAVA_INT.withName("quot"),
                ValueLayout.JAVA_INT.withName("rem"));
        MethodHandle div = NativeLibrary.downcall(() -> LIBC, "div",
                FunctionDescriptor.of(divT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        assertEquals(MethodType.methodType(MemorySegment.class, SegmentAllocator.class, int.class, int.class), div.type());
        try (Arena arena = Arena.ofConfined()) {
            // Safety: div_t div(int, int) returns { int quot; int rem; } by value, into the arena.
            MemorySegment result = (MemorySegment) div.invokeExact((SegmentAllocator) arena, 17, 5);
            assertEquals(3, result.get(ValueLayout.JAVA_INT, 0));
            assertEquals(2, result.get(ValueLayout.JAVA_INT, 4));
        }
    }

    @Test
    void aFunctionTheLibraryLacksFailsEveryCallNamingItAndTheLibrary() {
        Counting library = new Counting();
        MethodHandle missing = NativeLibrary.downcall(library, "cuFunctionFromTheFuture", STRLEN);
        for (int call = 1; call <= 2; call++) {
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> {
                        long ignored = (long) missing.invokeExact(MemorySegment.NULL);
                    });
            assertTrue(e.getMessage().startsWith("cuFunctionFromTheFuture is not exported by the C library (test)"),
                    e.getMessage());
            assertEquals(call, library.calls.get(), "asked again on every call");
        }
    }

    @Test
    void aLibraryThatCannotBeOpenedFailsEveryCallWithItsProvidersOwnException() {
        List<IllegalStateException> thrown = new ArrayList<>();
        MethodHandle strlen = NativeLibrary.downcall(() -> {
            IllegalStateException e = new IllegalStateException("no library here: reason " + thrown.size());
            thrown.add(e);
            throw e;
        }, "strlen", STRLEN);
        for (int call = 0; call < 2; call++) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                long ignored = (long) strlen.invokeExact(MemorySegment.NULL);
            });
            assertSame(thrown.get(call), e, "the provider's exception, unwrapped");
        }
        assertNotSame(thrown.get(0), thrown.get(1));
    }

    @Test
    void descriptorsHandlesAndConstantsNeedNoLibrary() {
        assertEquals(FunctionDescriptor.of(ValueLayout.JAVA_INT, CudaDriver.C_POINTER),
                CudaDriver.cuDriverGetVersion$descriptor());
        assertEquals(MethodType.methodType(int.class, MemorySegment.class), CudaDriver.cuDriverGetVersion$handle().type());
        assertEquals(MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class),
                Nvrtc.nvrtcVersion$handle().type());
        assertEquals(13000, CudaDriver.CUDA_VERSION());
        assertEquals(6, Nvrtc.NVRTC_ERROR_COMPILATION());
    }

    @Test
    void withoutARuntimeTheDriverIsOpenedByItsSonameOrEveryCallSaysWhyNot() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment version = arena.allocate(ValueLayout.JAVA_INT);
            if (opens("libcuda.so.1")) {
                assertEquals(0, CudaDriver.cuDriverGetVersion(version));
                assertTrue(version.get(ValueLayout.JAVA_INT, 0) >= 12000, "a CUDA 12 driver or newer");
                return;
            }
            for (int call = 0; call < 2; call++) {
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> CudaDriver.cuDriverGetVersion(version));
                assertTrue(e.getMessage().startsWith("The CUDA driver could not be opened: libcuda.so.1: "),
                        e.getMessage());
                assertTrue(e.getMessage().contains("without Gatun's runtime (dev.gatun:gatun-core)"), e.getMessage());
            }
            IllegalStateException address = assertThrows(IllegalStateException.class,
                    CudaDriver::cuDriverGetVersion$address);
            assertTrue(address.getMessage().startsWith("The CUDA driver could not be opened"), address.getMessage());
        }
    }

    @Test
    void withoutARuntimeNvrtcIsTriedUnderEachOfItsSonames() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
            if (opens("libnvrtc.so.13") || opens("libnvrtc.so.12") || opens("libnvrtc.so")) {
                assertEquals(0, Nvrtc.nvrtcVersion(major, minor));
                assertTrue(major.get(ValueLayout.JAVA_INT, 0) >= 12, "NVRTC 12 or newer");
                return;
            }
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> Nvrtc.nvrtcVersion(major, minor));
            assertTrue(e.getMessage().startsWith("NVRTC could not be opened: libnvrtc.so.13: "), e.getMessage());
            assertTrue(e.getMessage().contains("; libnvrtc.so.12: ") && e.getMessage().contains("; libnvrtc.so: "),
                    e.getMessage());
        }
    }

    /** Whether the dynamic loader opens {@code soname} on this machine: decides what the tests above expect. */
    private static boolean opens(String soname) {
        try (Arena probe = Arena.ofConfined()) {
            // Safety: mapped only to see whether it can be, then unmapped with the arena; nothing is called.
            return SymbolLookup.libraryLookup(soname, probe) != null;
        } catch (IllegalArgumentException e) {
            // The JDK's way of saying it cannot: the answer, not an error.
            return false;
        }
    }
}
