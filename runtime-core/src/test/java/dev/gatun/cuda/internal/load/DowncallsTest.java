package dev.gatun.cuda.internal.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodType;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class DowncallsTest {

    @Test
    void aHandleHasTheTypeOfTheGeneratedMethod() {
        MemorySegment strlen = Linker.nativeLinker().defaultLookup().find("strlen").orElseThrow();
        MethodType launch = MethodType.methodType(int.class, MemorySegment.class, int.class, int.class, int.class,
                int.class, int.class, int.class, int.class, MemorySegment.class, MemorySegment.class,
                MemorySegment.class);
        Downcalls libc = new Downcalls(CudaDriver.class, name -> Optional.of(strlen), "libc");
        assertEquals(launch, libc.type("cuLaunchKernel"));
        assertEquals(launch, libc.link("cuLaunchKernel", strlen).type(), "made, never called");
        assertEquals(MethodType.methodType(int.class, long.class, byte.class, long.class), libc.type("cuMemsetD8_v2"));
    }

    @Test
    void aNameTheBindingsDoNotHaveIsRefused() {
        Downcalls d = new Downcalls(CudaDriver.class, name -> Optional.empty(), "x");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.type("cuNoSuchFunction"));
        assertTrue(e.getMessage().contains("cuNoSuchFunction"), e.getMessage());
        assertEquals(Optional.empty(), d.find("cuInit"));
    }
}
