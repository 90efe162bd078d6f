package dev.gatun.cuda.junit;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import java.util.List;
import java.util.function.Supplier;

/** A {@link GpuExtension#CUDA_SUPPLIER_PARAMETER} for a machine without a driver: it fails as the loader does. */
public final class NoGpu implements Supplier<Cuda> {

    static final String TRIED = "/nowhere/libcuda.so.1: no such file";

    @Override
    public Cuda get() {
        throw new CudaUnavailableException("No CUDA driver could be loaded. Tried:\n  " + TRIED, List.of(TRIED));
    }
}
