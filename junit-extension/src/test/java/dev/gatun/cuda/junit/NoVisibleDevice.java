package dev.gatun.cuda.junit;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FaultPlan;
import java.util.function.Supplier;

/**
 * A {@link GpuExtension#CUDA_SUPPLIER_PARAMETER} for a driver that sees no device, the way drivers
 * answer {@code CUDA_VISIBLE_DEVICES=""}: it loads, and {@code cuInit} fails with
 * {@code CUDA_ERROR_NO_DEVICE} (100).
 */
public final class NoVisibleDevice implements Supplier<Cuda> {

    static final int CUDA_ERROR_NO_DEVICE = 100;

    @Override
    public Cuda get() {
        return FakeCuda.over(new FakeDriverApi(), new FaultPlan().replaceAlways("cuInit", CUDA_ERROR_NO_DEVICE));
    }
}
