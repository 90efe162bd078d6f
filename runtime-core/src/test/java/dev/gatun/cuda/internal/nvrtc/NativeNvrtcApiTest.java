package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.load.Downcalls;
import dev.gatun.cuda.nvrtc.NvrtcTooOldException;
import dev.gatun.cuda.testing.ZeroArguments;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * NVRTC's downcalls, bound on first use, over an NVRTC made of upcalls: each function's stub
 * answers a number of its own, so that a method reaching another function, or its own with
 * another prototype, shows.
 */
class NativeNvrtcApiTest {

    private static final Arena STUBS = Arena.ofShared();

    /** An NVRTC library of upcalls reporting {@code major.minor}, with the functions {@code exported}. */
    static final class FakeLibrary {
        final int major;
        final int minor;
        final List<String> lookedUp = new ArrayList<>();
        final Map<String, MemorySegment> stubs = new HashMap<>();

        FakeLibrary(int major, int minor, List<NvrtcFunction> exported) throws ReflectiveOperationException {
            this.major = major;
            this.minor = minor;
            Downcalls prototypes = new Downcalls(Nvrtc.class, name -> Optional.empty(), "prototypes");
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            for (NvrtcFunction f : exported) {
                var prototype = prototypes.descriptor(f.name());
                MethodHandle target = f == NvrtcFunction.nvrtcVersion
                        ? lookup.findVirtual(FakeLibrary.class, "version",
                                MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class)).bindTo(this)
                        : MethodHandles.dropArguments(MethodHandles.constant(int.class, 1000 + f.ordinal()), 0,
                                prototype.toMethodType().parameterList());
                // Safety: each stub has its function's own prototype, and is called through handles of it.
                stubs.put(f.name(), Linker.nativeLinker().upcallStub(target, prototype, STUBS));
            }
        }

        Optional<MemorySegment> find(String name) {
            lookedUp.add(name);
            return Optional.ofNullable(stubs.get(name));
        }

        int version(MemorySegment major, MemorySegment minor) {
            major.reinterpret(4).set(ValueLayout.JAVA_INT, 0, this.major);
            minor.reinterpret(4).set(ValueLayout.JAVA_INT, 0, this.minor);
            return 0;
        }
    }

    @Test
    void everyMethodCallsItsOwnFunctionOnceBoundAndLooksItUpOnce() throws Exception {
        FakeLibrary nvrtc = new FakeLibrary(12, 4, List.of(NvrtcFunction.values()));
        NativeNvrtcApi api = new NativeNvrtcApi(nvrtc::find, "fake");
        assertEquals(List.of(), nvrtc.lookedUp, "making the API looks nothing up");
        for (int round = 0; round < 2; round++) {
            for (Method m : NvrtcApi.class.getMethods()) {
                NvrtcFunction f = NvrtcFunction.valueOf(m.getName());
                if (f != NvrtcFunction.nvrtcVersion) {
                    assertEquals(1000 + f.ordinal(), m.invoke(api, ZeroArguments.of(m)), m.getName());
                }
            }
        }
        for (NvrtcFunction f : NvrtcFunction.values()) {
            assertEquals(1, nvrtc.lookedUp.stream().filter(f.name()::equals).count(), f.name());
        }
        assertEquals(NvrtcFunction.values().length, NvrtcApi.class.getMethods().length);
    }

    @Test
    void aFunctionTheLibraryLacksFailsOnlyItsOwnCallsTyped() throws Exception {
        List<NvrtcFunction> exported = new ArrayList<>(List.of(NvrtcFunction.values()));
        exported.remove(NvrtcFunction.nvrtcGetCUBIN);
        NativeNvrtcApi api = new NativeNvrtcApi(new FakeLibrary(13, 0, exported)::find, "/opt/libnvrtc.so.13");
        for (int round = 0; round < 2; round++) {
            NvrtcTooOldException e = assertThrows(NvrtcTooOldException.class,
                    () -> api.nvrtcGetCUBIN(MemorySegment.NULL, MemorySegment.NULL));
            assertEquals("nvrtcGetCUBIN", e.function());
            assertEquals(13000, e.installedVersion());
            assertTrue(e.getMessage().startsWith("nvrtcGetCUBIN needs NVRTC 11.1 or newer; the NVRTC at "
                    + "/opt/libnvrtc.so.13 is 13.0 and does not export it."), e.getMessage());
        }
        assertEquals(1000 + NvrtcFunction.nvrtcGetPTX.ordinal(), api.nvrtcGetPTX(MemorySegment.NULL, MemorySegment.NULL));
    }

    @Test
    void aFunctionNewerThanTheLibraryIsNotEvenLookedUp() throws Exception {
        FakeLibrary old = new FakeLibrary(11, 0, List.of(NvrtcFunction.values()));
        NativeNvrtcApi api = new NativeNvrtcApi(old::find, "old");
        Method cubin = NvrtcApi.class.getMethod("nvrtcGetCUBINSize", MemorySegment.class, MemorySegment.class);
        InvocationTargetException e = assertThrows(InvocationTargetException.class,
                () -> cubin.invoke(api, ZeroArguments.of(cubin)));
        NvrtcTooOldException tooOld = assertInstanceOf(NvrtcTooOldException.class, e.getCause());
        assertEquals(11010, tooOld.requiredVersion());
        assertEquals(11000, tooOld.installedVersion());
        assertEquals(List.of("nvrtcVersion"), old.lookedUp);
    }
}
