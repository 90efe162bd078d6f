package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.load.Downcalls;
import dev.gatun.cuda.testing.ZeroArguments;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The driver's downcalls, bound on first use, over a driver made of upcalls: its
 * {@code cuGetProcAddress_v2} hands out, for every function Gatun calls, a stub with that
 * function's C prototype that answers a number of its own, so that a method reaching another
 * function, or the right one with another prototype, shows. Nothing here needs a GPU.
 */
class NativeDriverApiTest {

    /** The stubs live as long as the static call sites, which the first instance of the JVM binds. */
    private static final Arena STUBS = Arena.ofShared();
    private static final Linker LINKER = Linker.nativeLinker();

    /** The answer of {@code function}'s stub in {@code driver}: distinct per function and per driver. */
    private static int answer(int driver, DriverFunction function) {
        return 100_000 * driver + 1000 + function.ordinal();
    }

    /** A driver library made of upcalls, reporting {@code version}, lacking {@code hidden} functions. */
    static final class FakeLibrary {
        private static int drivers;
        final int id = ++drivers;
        final int version;
        final Set<String> hidden = new HashSet<>();
        /** Every cuGetProcAddress_v2 asked: symbol@version/flags. */
        final List<String> asked = new ArrayList<>();
        /** The calls of cuCtxSetCurrent, by context. */
        final List<Long> setCurrent = new ArrayList<>();
        /** The thread's current context, as the driver keeps it. */
        long current = 0xC1;
        /** When a lookup of this name is asked, the thread "moves" to a carrier with context 0xC2. */
        String movesOnLookupOf;
        /** The current context each function's stub saw, last call. */
        final Map<DriverFunction, Long> sawContext = new EnumMap<>(DriverFunction.class);
        private final Map<DriverFunction, MemorySegment> stubs = new EnumMap<>(DriverFunction.class);
        final SymbolLookup symbols;

        FakeLibrary(int version) {
            this.version = version;
            Downcalls prototypes = new Downcalls(CudaDriver.class, name -> Optional.empty(), "prototypes",
                    ByValueStructs.DRIVER);
            for (DriverFunction f : DriverFunction.values()) {
                stubs.put(f, stub(f, prototypes.descriptor(f.binding())));
            }
            symbols = name -> {
                for (DriverFunction f : DriverFunction.values()) {
                    if (f.byName() && f.symbol().equals(name)) {
                        return Optional.of(stubs.get(f));
                    }
                }
                return Optional.empty();
            };
        }

        private MemorySegment stub(DriverFunction f, FunctionDescriptor prototype) {
            MethodHandle target;
            try {
                MethodHandles.Lookup lookup = MethodHandles.lookup();
                target = switch (f) {
                    case cuDriverGetVersion -> lookup.findVirtual(FakeLibrary.class, "driverGetVersion",
                            MethodType.methodType(int.class, MemorySegment.class)).bindTo(this);
                    case cuGetProcAddress_v2 -> lookup.findVirtual(FakeLibrary.class, "getProcAddress",
                            MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class, int.class,
                                    long.class, MemorySegment.class)).bindTo(this);
                    case cuCtxGetCurrent -> lookup.findVirtual(FakeLibrary.class, "ctxGetCurrent",
                            MethodType.methodType(int.class, MemorySegment.class)).bindTo(this);
                    case cuCtxSetCurrent -> lookup.findVirtual(FakeLibrary.class, "ctxSetCurrent",
                            MethodType.methodType(int.class, MemorySegment.class)).bindTo(this);
                    default -> MethodHandles.dropArguments(MethodHandles.insertArguments(lookup.findVirtual(
                            FakeLibrary.class, "called", MethodType.methodType(int.class, DriverFunction.class))
                            .bindTo(this), 0, f), 0, prototype.toMethodType().parameterList());
                };
            } catch (ReflectiveOperationException e) {
                throw new AssertionError(e);
            }
            // Safety: each stub's prototype is the function's own, and the handles that call it are
            // made from the same descriptor.
            return LINKER.upcallStub(target, prototype, STUBS);
        }

        int called(DriverFunction f) {
            sawContext.put(f, current);
            return answer(id, f);
        }

        int driverGetVersion(MemorySegment out) {
            out.reinterpret(4).set(ValueLayout.JAVA_INT, 0, version);
            return 0;
        }

        int ctxGetCurrent(MemorySegment out) {
            out.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, current);
            return 0;
        }

        int ctxSetCurrent(MemorySegment context) {
            setCurrent.add(context.address());
            current = context.address();
            return 0;
        }

        int getProcAddress(MemorySegment symbol, MemorySegment pfn, int cudaVersion, long flags, MemorySegment status) {
            String name = symbol.reinterpret(256).getString(0);
            asked.add(name + "@" + cudaVersion + "/" + flags);
            if (name.equals(movesOnLookupOf)) {
                current = 0xC2;
            }
            for (DriverFunction f : DriverFunction.values()) {
                if (!f.byName() && f.symbol().equals(name) && f.version() == cudaVersion && !hidden.contains(f.name())) {
                    pfn.reinterpret(8).set(ValueLayout.ADDRESS, 0, stubs.get(f));
                    status.reinterpret(4).set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_GET_PROC_ADDRESS_SUCCESS());
                    return 0;
                }
            }
            status.reinterpret(4).set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND());
            return CudaDriver.CUDA_ERROR_NOT_FOUND();
        }
    }

    /** Arguments for {@code m}: zeros and NULL, and a zeroed struct where the prototype takes one by value. */
    private static Object[] arguments(Method m, Arena arena) {
        Object[] args = ZeroArguments.of(m);
        String binding = DriverFunction.valueOf(m.getName()).binding();
        for (Map.Entry<Integer, MemoryLayout> e : ByValueStructs.DRIVER.getOrDefault(binding, Map.of()).entrySet()) {
            args[e.getKey()] = arena.allocate(e.getValue());
        }
        return args;
    }

    @Test
    void everyMethodCallsItsOwnEntryPointWithTheGeneratedPrototype() throws Exception {
        FakeLibrary driver = new FakeLibrary(13000);
        NativeDriverApi api = new NativeDriverApi(driver.symbols, "fake");
        int checked = 0;
        try (Arena arena = Arena.ofConfined()) {
            for (Method m : DriverApi.class.getMethods()) {
                DriverFunction f = DriverFunction.valueOf(m.getName());
                if (f == DriverFunction.cuDriverGetVersion || f == DriverFunction.cuGetProcAddress_v2
                        || f == DriverFunction.cuCtxGetCurrent || f == DriverFunction.cuCtxSetCurrent) {
                    continue; // the fake's own machinery, called through the others and below
                }
                assertEquals(answer(driver.id, f), m.invoke(api, arguments(m, arena)), m.getName());
                checked++;
            }
        }
        assertEquals(DriverFunction.values().length - 4, checked);
        assertEquals(0, api.cuCtxSetCurrent(MemorySegment.ofAddress(0xC3)));
        assertEquals(0xC3, driver.current, "cuCtxSetCurrent reached its own stub");
        for (DriverFunction f : DriverFunction.values()) {
            if (!f.byName()) {
                assertTrue(driver.asked.contains(f.symbol() + "@" + f.version() + "/" + EntryPoints.LEGACY_STREAM),
                        f + " asked for at its version, legacy-stream variants: " + driver.asked);
            }
        }
    }

    @Test
    void aFunctionIsLookedUpOnItsFirstCallAndNeverAgain() {
        FakeLibrary driver = new FakeLibrary(12000);
        NativeDriverApi api = new NativeDriverApi(driver.symbols, "fake");
        assertEquals(List.of(), driver.asked, "making the API looks nothing up");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(8);
            for (int i = 0; i < 3; i++) {
                assertEquals(answer(driver.id, DriverFunction.cuMemAlloc_v2), api.cuMemAlloc_v2(out, 64));
            }
        }
        assertEquals(1, driver.asked.stream().filter(a -> a.startsWith("cuMemAlloc@3020/")).count(),
                driver.asked::toString);
    }

    @Test
    void aFunctionNewerThanTheDriverFailsOnlyItsOwnCallsWithoutAskingTheDriver() {
        FakeLibrary driver = new FakeLibrary(12000);
        NativeDriverApi api = new NativeDriverApi(driver.symbols, "fake");
        MemorySegment nothing = MemorySegment.NULL;
        for (int round = 0; round < 2; round++) {
            DriverTooOldException e = assertThrows(DriverTooOldException.class,
                    () -> api.cuGreenCtxCreate(nothing, nothing, 0, 0));
            assertEquals("green contexts", e.feature());
            assertEquals("cuGreenCtxCreate", e.function());
            assertEquals(12040, e.requiredVersion());
            assertEquals(12000, e.installedVersion());
        }
        assertTrue(driver.asked.stream().noneMatch(a -> a.startsWith("cuGreenCtxCreate")), driver.asked.toString());
        assertEquals(answer(driver.id, DriverFunction.cuStreamQuery), api.cuStreamQuery(nothing),
                "the functions the driver has work");
    }

    @Test
    void aFunctionTheDriverDoesNotHaveFailsTypedOnEveryCallAndIsAskedForAgain() {
        FakeLibrary driver = new FakeLibrary(13000);
        driver.hidden.add("cuMemcpyBatchAsync_v2");
        NativeDriverApi api = new NativeDriverApi(driver.symbols, "fake");
        MemorySegment nothing = MemorySegment.NULL;
        for (int round = 0; round < 2; round++) {
            DriverTooOldException e = assertThrows(DriverTooOldException.class,
                    () -> api.cuMemcpyBatchAsync_v2(nothing, nothing, nothing, 0, nothing, nothing, 0, nothing));
            assertEquals("batched copies in one driver call", e.feature());
            assertTrue(e.getMessage().contains("cuGetProcAddress_v2(\"cuMemcpyBatchAsync\", 13000) answered "
                    + "CUDA_ERROR_NOT_FOUND"), e.getMessage());
        }
        assertEquals(2, driver.asked.stream().filter(a -> a.startsWith("cuMemcpyBatchAsync@")).count(),
                driver.asked::toString);
    }

    @Test
    void aFirstCallRunsInTheContextMadeCurrentForItEvenWhenTheBindingMovedTheThread() {
        FakeLibrary driver = new FakeLibrary(13000);
        NativeDriverApi api = new NativeDriverApi(driver.symbols, "fake");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(8);
            // Layer 2 made context 0xC1 current (driver.current); looking cuMemAlloc up "moves"
            // the thread to a carrier whose current context is 0xC2.
            driver.movesOnLookupOf = "cuMemAlloc";
            assertEquals(answer(driver.id, DriverFunction.cuMemAlloc_v2), api.cuMemAlloc_v2(out, 64));
            assertTrue(driver.asked.stream().anyMatch(a -> a.startsWith("cuMemAlloc@")), "the move happened");
            assertEquals(0xC1, driver.sawContext.get(DriverFunction.cuMemAlloc_v2), "the call ran in 0xC1");
            assertEquals(List.of(0xC1L), driver.setCurrent, "made current again, once");

            // Without a move, a first call makes no context current.
            driver.setCurrent.clear();
            assertEquals(answer(driver.id, DriverFunction.cuMemFree_v2), api.cuMemFree_v2(64));
            assertEquals(List.of(), driver.setCurrent);
            assertEquals(0xC1, driver.sawContext.get(DriverFunction.cuMemFree_v2));
        }
    }

    @Test
    void eachInstanceCallsItsOwnLibrarysFunctionsWhicheverBoundTheStaticCallSites() {
        // The first instance of the class loader calls through the static call sites, later ones
        // through their own; each must reach the library it was made for.
        FakeLibrary first = new FakeLibrary(13000);
        FakeLibrary second = new FakeLibrary(13000);
        NativeDriverApi a = new NativeDriverApi(first.symbols, "first");
        NativeDriverApi b = new NativeDriverApi(second.symbols, "second");
        for (int round = 0; round < 2; round++) {
            assertEquals(answer(first.id, DriverFunction.cuInit), a.cuInit(0));
            assertEquals(answer(second.id, DriverFunction.cuInit), b.cuInit(0));
            assertEquals(answer(first.id, DriverFunction.cuStreamQuery), a.cuStreamQuery(MemorySegment.NULL));
            assertEquals(answer(second.id, DriverFunction.cuStreamQuery), b.cuStreamQuery(MemorySegment.NULL));
        }
    }

    @Test
    void aFailedCuInitIsReportedEvenWhenTheErrorStringCannotBeBound() {
        FakeLibrary driver = new FakeLibrary(12000); // its cuInit answers a number of its own: a failure
        driver.hidden.add("cuGetErrorString");
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
                () -> Driver.create(new NativeDriverApi(driver.symbols, "fake"), "/fake/libcuda.so.1"));
        int failed = answer(driver.id, DriverFunction.cuInit);
        assertTrue(e.getMessage().startsWith("/fake/libcuda.so.1 loaded, but cuInit failed: CUresult " + failed + " ("
                + failed + "). Check"), e.getMessage());
        assertTrue(driver.asked.contains("cuGetErrorString@6000/" + EntryPoints.LEGACY_STREAM), driver.asked::toString);
    }

    @Test
    void aLibraryWithoutTheFunctionsFoundByNameIsNoDriver() {
        NativeDriverApi api = new NativeDriverApi(name -> Optional.empty(), "/nowhere/libcuda.so.1");
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> api.cuInit(0));
        assertTrue(e.getMessage().contains("/nowhere/libcuda.so.1 cannot be used: cuInit is not exported"),
                e.getMessage());
    }
}
