package dev.gatun.cuda.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class (or method) that needs a CUDA driver and a GPU, and registers
 * {@link GpuExtension} for it:
 *
 * <ul>
 *   <li>Without a driver or a device it is skipped, with the loader's reason, unless the
 *       configuration parameter {@value GpuExtension#REQUIRED_PARAMETER} is true: then it
 *       fails with the loader's full {@link dev.gatun.cuda.CudaUnavailableException}, so that
 *       a GPU host whose driver cannot be loaded never passes as "all skipped".
 *   <li>Its test and lifecycle methods can take {@link dev.gatun.cuda.Device},
 *       {@link dev.gatun.cuda.CudaContext} and {@link dev.gatun.cuda.Stream} parameters
 *       (device 0, or the one {@link OnDevice} names).
 *   <li>A test that leaves owners of an injected context open fails, naming each with where
 *       it was created.
 *   <li>A test that poisons a context with a sticky error fails saying so, and the later tests
 *       on that device are skipped instead of failing one after the other.
 * </ul>
 *
 * <p>{@link GpuExtension} says exactly when each of these applies.
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(GpuExtension.class)
public @interface RequiresGpu {
}
