package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.bindings.NativeLibrary;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverFunction;
import dev.gatun.cuda.internal.driver.EntryPoints;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * What the real driver answers the questions Gatun asks it, and the simulated driver's model of
 * those answers: every function Gatun calls, asked for through {@code cuGetProcAddress_v2} at the
 * version driver.functions gives it, is there on this driver (so every one of them binds); a
 * name the driver does not know, a version older than every variant, and a version newer than
 * the driver are answered as the simulated driver answers them (SimulatedDevices). Prints one
 * ENTRY-POINTS line.
 */
@RequiresGpu
class DriverEntryPointsGpuTest {

    private static final long LEGACY = EntryPoints.LEGACY_STREAM;

    /** One raw {@code cuGetProcAddress_v2}: result, status and whether an address came back, as text. */
    private record Answer(int result, int status, MemorySegment address) {
        static Answer of(String symbol, int version) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment pfn = arena.allocate(ValueLayout.ADDRESS);
                MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
                status.set(ValueLayout.JAVA_INT, 0, -1); // poisoned: the driver must write it
                // Safety: the symbol is NUL-terminated; pfn and status are the sizes the driver writes.
                int r = CudaDriver.cuGetProcAddress_v2(arena.allocateFrom(symbol), pfn, version, LEGACY, status);
                return new Answer(r, status.get(ValueLayout.JAVA_INT, 0), pfn.get(ValueLayout.ADDRESS, 0));
            }
        }

        @Override
        public String toString() {
            return result + "/" + status + (address.equals(MemorySegment.NULL) ? "/no address" : "/an address");
        }
    }

    @Test
    void everyFunctionGatunCallsIsThereAtItsVersionAndTheDriverAnswersAsTheSimulatorDoes() {
        int installed = Cuda.system().driverVersion().encoded();
        List<String> missing = new ArrayList<>();
        int asked = 0;
        int sameAsByName = 0;
        for (DriverFunction f : DriverFunction.values()) {
            if (f.byName() || f.version() > installed) {
                continue;
            }
            asked++;
            MemorySegment address;
            try {
                address = EntryPoints.resolve(CudaDriver::cuGetProcAddress_v2, installed, f);
            } catch (RuntimeException e) {
                missing.add(e.getMessage());
                continue;
            }
            Optional<MemorySegment> byName = NativeLibrary.DRIVER.lookup().find(f.name());
            if (byName.isPresent() && byName.get().address() == address.address()) {
                sameAsByName++;
            }
        }
        assertEquals(List.of(), missing, "functions this driver (CUDA " + Cuda.system().driverVersion()
                + ") should have at the versions driver.functions gives them");

        Answer unknown = Answer.of("cuNoSuchFunction", installed);
        Answer tooLow = Answer.of("cuGreenCtxCreate", 12000); // introduced in 12.4
        Answer tooHigh = Answer.of("cuMemAlloc", installed + 10);
        System.out.println("ENTRY-POINTS CUDA " + Cuda.system().driverVersion() + ": " + asked + " of "
                + DriverFunction.values().length + " functions asked for (the rest are found by name or newer than the "
                + "driver), all found at their versions; " + sameAsByName + " at the address dlsym gives their name. "
                + "Answers (result/status): cuNoSuchFunction " + unknown + ", cuGreenCtxCreate@12000 " + tooLow
                + ", cuMemAlloc@" + (installed + 10) + " " + tooHigh);
        assertEquals(CudaDriver.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND(), unknown.status(), "an unknown name");
        assertEquals(MemorySegment.NULL, unknown.address());
        assertTrue(unknown.result() == CudaDriver.CUDA_ERROR_NOT_FOUND() || unknown.result() == 0,
                "an unknown name: " + unknown);
        if (installed >= 12040) {
            assertEquals(CudaDriver.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT(), tooLow.status(),
                    "a version older than the function");
            assertEquals(MemorySegment.NULL, tooLow.address());
        }
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), tooHigh.result(), "a version newer than the driver");
    }
}
