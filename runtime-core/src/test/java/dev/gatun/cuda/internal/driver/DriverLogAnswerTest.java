package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import java.lang.foreign.Arena;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/**
 * A call Gatun marks as a question (its refusal is an answer) holds its lines until it is
 * answered: dropped to DEBUG when the refusal was the answer, attributed as any call's when it
 * was not, so a real failure of such a call still explains itself. The call here is a raw one to
 * the attributing seam, as the checked layer makes it.
 */
class DriverLogAnswerTest {

    private static final String DRIVER_LOGGER = "dev.gatun.cuda.driver";
    private static final int ERROR = CudaDriver.CU_LOG_LEVEL_ERROR();
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private final FakeDriverApi gpu = new FakeDriverApi();
    /** The calls as the checked layer makes them: through the seam that attributes the driver's lines. */
    private final DriverApi api = Driver.create(gpu.api(), "simulated").api();
    private final Arena arena = Arena.ofAuto();

    /** A device attribute query that the simulated driver refuses, and explains, in the call. */
    private int refusedQuery() {
        gpu.failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE());
        return api.cuDeviceGetAttribute(arena.allocate(4), CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE(), 0);
    }

    @Test
    void theLinesOfARefusalThatWasTheAnswerGoToDebugAndAreNotKept() {
        LogCapture.enableDebug(DRIVER_LOGGER);
        DriverLog.asking();
        int r = refusedQuery();
        DriverLog.answered(r, r == INVALID_VALUE);
        assertEquals(List.of(), DriverLog.take(INVALID_VALUE));
        LogCapture.expect(Level.DEBUG, DRIVER_LOGGER, "is not an attribute this device reports (a refusal Gatun asked for");
        assertEquals(List.of(), LogCapture.find(Level.WARN, DRIVER_LOGGER, "is not an attribute this device reports"));
    }

    @Test
    void theLinesOfAnotherFailureOfTheSameCallAreKeptAndForwarded() {
        DriverLog.asking();
        int r = refusedQuery();
        DriverLog.answered(r, false);
        assertEquals(List.of("cuDeviceGetAttribute: attrib " + CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE()
                + " is not an attribute this device reports"), DriverLog.take(r));
        LogCapture.expect(Level.WARN, DRIVER_LOGGER, "is not an attribute this device reports");
    }

    @Test
    void anExceptionForAnotherResultThanTheLastFailuresFindsNoLines() {
        int r = refusedQuery();
        assertEquals(INVALID_VALUE, r);
        assertEquals(List.of(), DriverLog.take(CudaDriver.CUDA_ERROR_INVALID_HANDLE()), "a made-up or older failure");
        assertEquals(List.of(), DriverLog.take(r), "the last failure is forgotten once an exception looked at it");
    }
}
