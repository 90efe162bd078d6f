package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/**
 * A call Gatun marks as a question (its refusal is an answer) holds its lines until it returns:
 * dropped to DEBUG when the refusal was the answer, kept and forwarded as any line when it was
 * not, so a real failure of such a call still explains itself.
 */
class DriverLogAnswerTest {

    private static final String DRIVER_LOGGER = "dev.gatun.cuda.driver";
    private static final int ERROR = CudaDriver.CU_LOG_LEVEL_ERROR();

    private final Simulated sim = new Simulated(); // registers the callback with its simulated driver

    @Test
    void theLinesOfARefusalThatWasTheAnswerGoToDebugAndAreNotKept() {
        LogCapture.enableDebug(DRIVER_LOGGER);
        DriverLog.take();
        DriverLog.asking();
        sim.gpu.driverLogs(ERROR, "cuFuncGetParamInfo: paramIndex 2 outside of kernel parameter count 2");
        DriverLog.answered(true);
        assertEquals(List.of(), DriverLog.take());
        LogCapture.expect(Level.DEBUG, DRIVER_LOGGER, "paramIndex 2 outside of kernel parameter count 2");
        assertEquals(List.of(), LogCapture.find(Level.WARN, DRIVER_LOGGER, "paramIndex 2"));
    }

    @Test
    void theLinesOfAnotherFailureOfTheSameCallAreKeptAndForwarded() {
        DriverLog.take();
        DriverLog.asking();
        sim.gpu.driverLogs(ERROR, "cuFuncGetParamInfo: the function's module was unloaded");
        DriverLog.answered(false);
        assertEquals(List.of("cuFuncGetParamInfo: the function's module was unloaded"), DriverLog.take());
        LogCapture.expect(Level.WARN, DRIVER_LOGGER, "the function's module was unloaded");
    }
}
