package dev.gatun.cuda.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Which device an injected {@link dev.gatun.cuda.Device}, {@link dev.gatun.cuda.CudaContext} or
 * {@link dev.gatun.cuda.Stream} parameter belongs to; without it, device 0. A test whose
 * parameters name a device the driver does not report is skipped.
 *
 * <pre>{@code
 * @Test
 * void copiesBetweenDevices(CudaContext first, @OnDevice(1) CudaContext second) { ... }
 * }</pre>
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface OnDevice {

    /** {@return the device's ordinal, as {@link dev.gatun.cuda.Cuda#device(int)} takes it} */
    int value();
}
