package dev.gatun.cuda.gpu;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class (or method) that needs a CUDA driver and a GPU. Where there is none it is
 * skipped, with the loader's reason, unless the configuration parameter
 * {@value GpuAvailableCondition#REQUIRED_PARAMETER} is true: then it fails with the full
 * {@link dev.gatun.cuda.CudaUnavailableException}, so that a GPU host whose driver cannot be
 * loaded never passes as "all skipped".
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(GpuAvailableCondition.class)
public @interface RequiresGpu {
}
