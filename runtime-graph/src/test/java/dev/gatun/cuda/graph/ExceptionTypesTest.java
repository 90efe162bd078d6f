package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.GatunException;
import dev.gatun.cuda.testing.ExceptionTypes;
import java.io.IOException;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The graph module adds one exception type, a runtime failure under {@code GatunException}; a
 * driver failure in a slot is the driver's {@code CudaException} itself, and misuse of slots,
 * groups and the latch is a plain IllegalArgumentException or IllegalStateException.
 */
class ExceptionTypesTest {

    @Test
    void theGraphModuleDeclaresOnlyTheLatchsRuntimeFailure() throws IOException {
        assertEquals(Set.of(ValidationLatchException.class), ExceptionTypes.declaredIn("dev.gatun.cuda.graph", getClass()));
        assertEquals(GatunException.class, ValidationLatchException.class.getSuperclass());
    }
}
