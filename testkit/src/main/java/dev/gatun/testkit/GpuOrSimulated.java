package dev.gatun.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class (or method) on a real GPU where one is present and on the simulated driver
 * otherwise: its test methods, and their {@code @BeforeEach} and {@code @AfterEach} methods, take
 * a {@link GpuUnderTest} parameter, one per test, closed (and checked for leaks) after the test's
 * {@code @AfterEach} methods. {@link TestTarget#SETTING} overrides the choice. A
 * {@link SimulatedGpu} parameter always gets the simulator: for the tests that use its controls.
 * See {@link GpuOrSimulatedExtension}.
 *
 * <pre>{@code
 * @GpuOrSimulated
 * class EngineTest {
 *     @Test
 *     void servesARequest(GpuUnderTest gpu) {
 *         try (Kernel scale = gpu.kernel("scale", KernelCode.cuda(SCALE_SOURCE), EngineTest::scale)) {
 *             ...
 *         }
 *     }
 * }
 * }</pre>
 */
@java.lang.annotation.Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(GpuOrSimulatedExtension.class)
public @interface GpuOrSimulated {
}
