package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Loading the process's driver never throws, and an unexpected failure keeps its cause. */
class DriverLoadTest {

    @Test
    void anUnexpectedFailureBecomesTheTypedExceptionWithItsCauseOnEveryCall() {
        IllegalStateException failure = new IllegalStateException("the loader broke");
        Object state = Driver.load(() -> {
            throw failure;
        });
        CudaUnavailableException e = assertInstanceOf(CudaUnavailableException.class, state);
        assertTrue(e.getMessage().contains("the loader broke"), e.getMessage());
        assertSame(failure, e.getCause());
        assertSame(failure, e.again().getCause(), "every later caller sees the cause too");
    }

    @Test
    void aMissingLibraryIsTheStateAsItsSearchReportedIt() {
        CudaUnavailableException missing = new CudaUnavailableException("no driver here", List.of("nowhere"));
        assertSame(missing, Driver.load(() -> {
            throw missing;
        }));
    }
}
