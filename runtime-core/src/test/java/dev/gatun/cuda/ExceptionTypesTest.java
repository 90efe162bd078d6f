package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.nvrtc.CompilationException;
import dev.gatun.cuda.nvrtc.NvrtcTooOldException;
import dev.gatun.cuda.testing.ExceptionTypes;
import java.io.IOException;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Few exception types, and every runtime failure under {@link GatunException}: the API packages
 * declare exactly these, so that {@code catch (GatunException e)} catches every runtime failure
 * Gatun reports. Misuse is the JDK's IllegalArgumentException or IllegalStateException, never a
 * type of Gatun's beside them.
 */
class ExceptionTypesTest {

    @Test
    void theApiDeclaresFewExceptionTypesAllUnderGatunException() throws IOException {
        Set<Class<?>> declared = ExceptionTypes.declaredIn("dev.gatun.cuda", getClass());
        declared.addAll(ExceptionTypes.declaredIn("dev.gatun.cuda.nvrtc", getClass()));
        assertEquals(Set.of(GatunException.class, CudaException.class, ContextPoisonedException.class,
                CaptureInvalidatedException.class, CompilationException.class, CudaUnavailableException.class,
                DriverTooOldException.class, CaptureActiveException.class, ReservationExceededException.class,
                OutOfDeviceMemoryException.class, LaunchRefusedException.class, ImageRejectedException.class,
                CaptureArenaOverflowException.class, NvrtcTooOldException.class), declared);
        for (Class<?> type : declared) {
            assertTrue(GatunException.class.isAssignableFrom(type), type + " is a runtime failure outside GatunException");
        }
    }

    @Test
    void failuresTheDriverReportedAreCudaExceptions() {
        assertTrue(CudaException.class.isAssignableFrom(ContextPoisonedException.class));
        assertTrue(CudaException.class.isAssignableFrom(CaptureInvalidatedException.class),
                "an invalidated capture is the driver's CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
        assertTrue(CudaException.class.isAssignableFrom(CompilationException.class));
        assertTrue(CudaException.class.isAssignableFrom(OutOfDeviceMemoryException.class),
                "out of memory after the ladder is still the driver's CUDA_ERROR_OUT_OF_MEMORY");
        assertTrue(CudaException.class.isAssignableFrom(LaunchRefusedException.class),
                "a refused launch keeps the driver's result");
        assertTrue(CudaException.class.isAssignableFrom(ImageRejectedException.class),
                "a rejected image keeps the driver's result");
    }
}
