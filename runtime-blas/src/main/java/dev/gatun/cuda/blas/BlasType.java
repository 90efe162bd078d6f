package dev.gatun.cuda.blas;

import dev.gatun.cuda.ElementType;
import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;

/** The element types of GEMM and cuDNN operands Gatun offers, with the libraries' codes for them. */
public enum BlasType {
    /** 32-bit IEEE float ({@code CUDA_R_32F}); views {@link ElementType#FLOAT}. */
    F32(ElementType.FLOAT, Cublas.CUDA_R_32F(), Cudnn.CUDNN_DATA_FLOAT()),
    /** 16-bit IEEE half ({@code CUDA_R_16F}); views {@link ElementType#HALF}. */
    F16(ElementType.HALF, Cublas.CUDA_R_16F(), Cudnn.CUDNN_DATA_HALF()),
    /** bfloat16 ({@code CUDA_R_16BF}); views {@link ElementType#BFLOAT16}. */
    BF16(ElementType.BFLOAT16, Cublas.CUDA_R_16BF(), Cudnn.CUDNN_DATA_BFLOAT16());

    private final ElementType element;
    private final int cudaDataType;
    private final int cudnnDataType;

    BlasType(ElementType element, int cudaDataType, int cudnnDataType) {
        this.element = element;
        this.cudaDataType = cudaDataType;
        this.cudnnDataType = cudnnDataType;
    }

    /** {@return the element type a view of this type has ({@code buffer.as(type.elementType())})} */
    public ElementType elementType() {
        return element;
    }

    /** {@return the size of one element in bytes} */
    public int bytes() {
        return (int) element.byteSize();
    }

    int cudaDataType() {
        return cudaDataType;
    }

    int cudnnDataType() {
        return cudnnDataType;
    }
}
