package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.ZeroArguments;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** NVRTC's downcall handles, built without NVRTC: each method reaches its own function's handle. */
class NativeNvrtcApiTest {

    @Test
    void everyMethodCallsItsOwnFunctionWithTheGeneratedSignature() {
        NativeNvrtcApi api = new NativeNvrtcApi(name -> Optional.empty(), "/nowhere/libnvrtc.so.13");
        for (Method m : NvrtcApi.class.getMethods()) {
            InvocationTargetException e = assertThrows(InvocationTargetException.class,
                    () -> m.invoke(api, ZeroArguments.of(m)), m.getName());
            IllegalStateException missing = assertInstanceOf(IllegalStateException.class, e.getCause(), m.getName());
            assertTrue(missing.getMessage().startsWith(m.getName() + " is not exported by /nowhere/libnvrtc.so.13"),
                    missing.getMessage());
        }
        assertEquals(12, NvrtcApi.class.getMethods().length);
    }
}
