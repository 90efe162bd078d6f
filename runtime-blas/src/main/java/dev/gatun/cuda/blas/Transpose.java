package dev.gatun.cuda.blas;

import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;

/** Whether a GEMM operand is used as stored (column-major, as cuBLAS) or transposed. */
public enum Transpose {
    /** As stored ({@code CUBLAS_OP_N}). */
    N(Cublas.CUBLAS_OP_N()),
    /** Transposed ({@code CUBLAS_OP_T}). */
    T(Cublas.CUBLAS_OP_T());

    private final int code;

    Transpose(int code) {
        this.code = code;
    }

    int code() {
        return code;
    }
}
