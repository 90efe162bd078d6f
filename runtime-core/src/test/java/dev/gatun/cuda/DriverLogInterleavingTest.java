package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The driver log's attribution while two threads' calls overlap, forced with an
 * {@link Interposer}: a thread held inside a call that has logged a line (so lines wait, and every
 * call of every thread looks its own lines up as it returns) keeps that line for its own call,
 * while the other thread's calls, one that succeeds and logs and one that fails, see only theirs.
 */
class DriverLogInterleavingTest {

    private static final int ERROR = CudaDriver.CU_LOG_LEVEL_ERROR();
    private static final int WARNING = CudaDriver.CU_LOG_LEVEL_WARNING();
    private static final int CLOCK_RATE = CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE();
    private static final String HELD_LINE = "cuMemGetInfo: the context is being torn down";
    private static final String CLOCK_RATE_REFUSED = "cuDeviceGetAttribute: attrib " + CLOCK_RATE
            + " is not an attribute this device reports";

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();

    @Test
    void aThreadHeldInsideACallThatLoggedKeepsItsLineWhileAnotherThreadsCallsReturn() {
        sim.gpu.failAttribute(CLOCK_RATE);
        // The held thread's call logs its line, then stops after the real call, before it returns.
        Interposer.Stop held = interposer.stopAfter("cuMemGetInfo_v2").onThread("held");
        Background<CudaException> inside = Background.call("held", () -> {
            sim.gpu.driverLogsDuringNext("cuMemGetInfo_v2", ERROR, HELD_LINE);
            sim.faults.overrideOnce("cuMemGetInfo_v2", CudaDriver.CUDA_ERROR_INVALID_HANDLE());
            return assertThrows(CudaException.class, ctx.diagnostics()::memoryInfo);
        });
        held.awaitArrival();

        Background<List<String>> other = Background.call("other", () -> {
            try (Stream s = ctx.createStream()) {
                sim.gpu.driverLogsDuringNext("cuStreamQuery", WARNING, "Unsupported node type: 7");
                assertTrue(s.query(), "a query that succeeds, and logs");
            }
            return assertThrows(CudaException.class, () -> ctx.device().attribute(DeviceAttribute.CLOCK_RATE)).driverLog();
        });
        assertEquals(List.of(CLOCK_RATE_REFUSED), other.join(), "the other thread's failure carries its own line");
        assertFalse(inside.finished(), "the held thread was still inside its call while the other thread's returned");

        held.release();
        CudaException e = inside.join();
        assertEquals(List.of(HELD_LINE), e.driverLog(), "the held call's line stayed its own");
        assertEquals("CUDA_ERROR_INVALID_HANDLE", e.resultName());
    }
}
