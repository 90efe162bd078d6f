package dev.gatun.cuda.internal.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class DowncallsTest {

    @Test
    void aHandleHasTheTypeOfTheGeneratedMethodWhetherTheSymbolIsThereOrNot() {
        MemorySegment strlen = Linker.nativeLinker().defaultLookup().find("strlen").orElseThrow();
        MethodType launch = MethodType.methodType(int.class, MemorySegment.class, int.class, int.class, int.class,
                int.class, int.class, int.class, int.class, MemorySegment.class, MemorySegment.class,
                MemorySegment.class);
        assertEquals(launch, new Downcalls(CudaDriver.class, name -> Optional.of(strlen), "libc")
                .handle("cuLaunchKernel").type());
        MethodHandle missing = new Downcalls(CudaDriver.class, name -> Optional.empty(), "/lib/libcuda.so.1")
                .handle("cuMemsetD8_v2");
        assertEquals(MethodType.methodType(int.class, long.class, byte.class, long.class), missing.type());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> { int r = (int) missing.invokeExact(0L, (byte) 0, 0L); });
        assertTrue(e.getMessage().startsWith("cuMemsetD8_v2 is not exported by /lib/libcuda.so.1"), e.getMessage());
    }

    @Test
    void aNameTheBindingsDoNotHaveIsRefused() {
        Downcalls d = new Downcalls(CudaDriver.class, name -> Optional.empty(), "x");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.handle("cuNoSuchFunction"));
        assertTrue(e.getMessage().contains("cuNoSuchFunction"), e.getMessage());
    }
}
