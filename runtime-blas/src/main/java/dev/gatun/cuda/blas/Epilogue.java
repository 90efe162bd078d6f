package dev.gatun.cuda.blas;

import dev.gatun.cuda.blas.internal.bindings.cublaslt.CublasLt;

/**
 * What cuBLASLt fuses after the product ({@code cublasLtEpilogue_t}): a bias added per output row
 * (a vector of {@code m} elements of the output's type), then ReLU or GELU (tanh approximation).
 * cuBLAS's {@code cublasGemmEx} has none: a spec with an epilogue runs on cuBLASLt only.
 */
public enum Epilogue {
    /** D = alpha op(A) op(B) + beta D. */
    NONE(CublasLt.CUBLASLT_EPILOGUE_DEFAULT(), false),
    /** relu(...). */
    RELU(CublasLt.CUBLASLT_EPILOGUE_RELU(), false),
    /** ... + bias, broadcast along the columns. */
    BIAS(CublasLt.CUBLASLT_EPILOGUE_BIAS(), true),
    /** relu(... + bias). */
    RELU_BIAS(CublasLt.CUBLASLT_EPILOGUE_RELU_BIAS(), true),
    /** gelu(...), tanh approximation. */
    GELU(CublasLt.CUBLASLT_EPILOGUE_GELU(), false),
    /** gelu(... + bias). */
    GELU_BIAS(CublasLt.CUBLASLT_EPILOGUE_GELU_BIAS(), true);

    private final int code;
    private final boolean bias;

    Epilogue(int code, boolean bias) {
        this.code = code;
        this.bias = bias;
    }

    /** {@return whether it reads a bias vector} */
    public boolean hasBias() {
        return bias;
    }

    int code() {
        return code;
    }
}
