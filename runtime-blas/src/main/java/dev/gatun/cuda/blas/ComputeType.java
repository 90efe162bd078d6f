package dev.gatun.cuda.blas;

import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;
import java.util.Set;

/**
 * How a GEMM accumulates ({@code cublasComputeType_t}), and which operand types each allows
 * (cuBLAS's table for {@code cublasGemmEx} and {@code cublasLtMatmul}, restricted to the types
 * Gatun offers): A and B of one type, C/D of that type or, with 32-bit accumulation, F32.
 */
public enum ComputeType {
    /** fp32 accumulation, fp32 math ({@code CUBLAS_COMPUTE_32F}): F32, F16 or BF16 inputs. */
    F32(Cublas.CUBLAS_COMPUTE_32F(), Set.of(BlasType.F32, BlasType.F16, BlasType.BF16)),
    /** fp32 accumulation with TF32 tensor cores for F32 inputs ({@code CUBLAS_COMPUTE_32F_FAST_TF32}). */
    F32_FAST_TF32(Cublas.CUBLAS_COMPUTE_32F_FAST_TF32(), Set.of(BlasType.F32)),
    /** fp32 accumulation, F32 inputs rounded to fp16 ({@code CUBLAS_COMPUTE_32F_FAST_16F}). */
    F32_FAST_16F(Cublas.CUBLAS_COMPUTE_32F_FAST_16F(), Set.of(BlasType.F32)),
    /** fp32 accumulation, F32 inputs rounded to bf16 ({@code CUBLAS_COMPUTE_32F_FAST_16BF}). */
    F32_FAST_16BF(Cublas.CUBLAS_COMPUTE_32F_FAST_16BF(), Set.of(BlasType.F32)),
    /** fp16 accumulation ({@code CUBLAS_COMPUTE_16F}): F16 everywhere. */
    F16(Cublas.CUBLAS_COMPUTE_16F(), Set.of(BlasType.F16));

    private final int code;
    private final Set<BlasType> inputs;

    ComputeType(int code, Set<BlasType> inputs) {
        this.code = code;
        this.inputs = inputs;
    }

    /** {@return the A and B types this compute type accepts} */
    public Set<BlasType> inputTypes() {
        return inputs;
    }

    /**
     * {@return the output types it accepts for inputs of {@code input}: the input's own, and F32
     * when it accumulates in fp32}
     *
     * @param input the type of A and B
     */
    public Set<BlasType> outputTypes(BlasType input) {
        return this == F16 || input == BlasType.F32 ? Set.of(input) : Set.of(input, BlasType.F32);
    }

    /** {@return the type of alpha and beta: F16 for {@link #F16}, else F32} */
    public BlasType scaleType() {
        return this == F16 ? BlasType.F16 : BlasType.F32;
    }

    int code() {
        return code;
    }
}
