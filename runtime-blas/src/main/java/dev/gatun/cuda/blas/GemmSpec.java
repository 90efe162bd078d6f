package dev.gatun.cuda.blas;

import dev.gatun.cuda.DeviceView;
import java.util.Objects;

/**
 * The shape, types and options of a GEMM, {@code D = epilogue(alpha op(A) op(B) + beta D)}, in
 * cuBLAS's column-major convention: op(A) is m x k, op(B) is k x n, D is m x n; a matrix of
 * {@code rows x cols} with leading dimension {@code ld} holds element (i, j) at {@code i + j ld}.
 * (Row-major data: compute D^T = op(B)^T op(A)^T, i.e. swap A with B and m with n.) A strided
 * batch runs {@code batchCount} GEMMs, operand {@code X} of GEMM {@code i} starting
 * {@code i strideX} elements after the first.
 *
 * <p>Immutable; {@code with...} returns a copy. A leading dimension or stride of 0 means
 * "packed" (the smallest valid one). Validated as a whole when a {@link Gemm} or {@link Matmul}
 * is prepared from it ({@link #validate()}), and each call's views against it.
 *
 * @param m rows of op(A) and D
 * @param n columns of op(B) and D
 * @param k columns of op(A), rows of op(B)
 * @param transA whether A is used transposed
 * @param transB whether B is used transposed
 * @param inputType the type of A and B
 * @param outputType the type of D (and of the bias)
 * @param computeType how the products accumulate
 * @param lda A's leading dimension, 0 for packed
 * @param ldb B's leading dimension, 0 for packed
 * @param ldd D's leading dimension, 0 for packed
 * @param batchCount how many GEMMs, at least 1
 * @param strideA elements between two A's of the batch; 0 for packed when the batch has more
 *     than one (to share one A across the batch, pass {@link #SHARED})
 * @param strideB as strideA, for B
 * @param strideD as strideA, for D (never shared)
 * @param epilogue what cuBLASLt fuses after the product ({@link Epilogue#NONE} for cuBLAS)
 * @param alpha the product's scale
 * @param beta D's scale before it is added (0: D is only written)
 */
public record GemmSpec(int m, int n, int k, Transpose transA, Transpose transB, BlasType inputType,
        BlasType outputType, ComputeType computeType, long lda, long ldb, long ldd, int batchCount, long strideA,
        long strideB, long strideD, Epilogue epilogue, float alpha, float beta) {

    /** A stride that makes every GEMM of a batch use the same operand (A or B). */
    public static final long SHARED = -1;

    /** Checks the components' presence; the whole is checked by {@link #validate()}. */
    public GemmSpec {
        Objects.requireNonNull(transA, "transA");
        Objects.requireNonNull(transB, "transB");
        Objects.requireNonNull(inputType, "inputType");
        Objects.requireNonNull(outputType, "outputType");
        Objects.requireNonNull(computeType, "computeType");
        Objects.requireNonNull(epilogue, "epilogue");
    }

    /**
     * A single {@code m x n x k} GEMM of {@code type} operands and output, not transposed, packed,
     * accumulated in fp32, alpha 1, beta 0, no epilogue.
     *
     * @param m rows of A and D
     * @param n columns of B and D
     * @param k columns of A, rows of B
     * @param type the type of A, B and D
     * @return the spec
     */
    public static GemmSpec of(int m, int n, int k, BlasType type) {
        return new GemmSpec(m, n, k, Transpose.N, Transpose.N, type, type, ComputeType.F32, 0, 0, 0, 1, 0, 0, 0,
                Epilogue.NONE, 1f, 0f);
    }

    /**
     * {@return a copy with these transposes (packed leading dimensions follow them)}
     *
     * @param a how A is used
     * @param b how B is used
     */
    public GemmSpec withTranspose(Transpose a, Transpose b) {
        return new GemmSpec(m, n, k, a, b, inputType, outputType, computeType, lda, ldb, ldd, batchCount, strideA,
                strideB, strideD, epilogue, alpha, beta);
    }

    /**
     * {@return a copy with D (and the bias) of type {@code type}}
     *
     * @param type the output type
     */
    public GemmSpec withOutputType(BlasType type) {
        return new GemmSpec(m, n, k, transA, transB, inputType, type, computeType, lda, ldb, ldd, batchCount, strideA,
                strideB, strideD, epilogue, alpha, beta);
    }

    /**
     * {@return a copy that accumulates as {@code type} says}
     *
     * @param type the compute type
     */
    public GemmSpec withComputeType(ComputeType type) {
        return new GemmSpec(m, n, k, transA, transB, inputType, outputType, type, lda, ldb, ldd, batchCount, strideA,
                strideB, strideD, epilogue, alpha, beta);
    }

    /**
     * {@return a copy with these leading dimensions (0: packed)}
     *
     * @param a A's
     * @param b B's
     * @param d D's
     */
    public GemmSpec withLeadingDimensions(long a, long b, long d) {
        return new GemmSpec(m, n, k, transA, transB, inputType, outputType, computeType, a, b, d, batchCount, strideA,
                strideB, strideD, epilogue, alpha, beta);
    }

    /**
     * {@return a copy that runs {@code count} GEMMs with these strides, in elements}
     *
     * @param count how many GEMMs
     * @param a A's stride (0: packed; {@link #SHARED}: one A for all)
     * @param b B's stride (0: packed; {@link #SHARED}: one B for all)
     * @param d D's stride (0: packed)
     */
    public GemmSpec withBatch(int count, long a, long b, long d) {
        return new GemmSpec(m, n, k, transA, transB, inputType, outputType, computeType, lda, ldb, ldd, count, a, b, d,
                epilogue, alpha, beta);
    }

    /**
     * {@return a copy with this epilogue (cuBLASLt only)}
     *
     * @param e the epilogue
     */
    public GemmSpec withEpilogue(Epilogue e) {
        return new GemmSpec(m, n, k, transA, transB, inputType, outputType, computeType, lda, ldb, ldd, batchCount,
                strideA, strideB, strideD, e, alpha, beta);
    }

    /**
     * {@return a copy with these scales}
     *
     * @param a alpha, the product's
     * @param b beta, D's before the product is added
     */
    public GemmSpec withScale(float a, float b) {
        return new GemmSpec(m, n, k, transA, transB, inputType, outputType, computeType, lda, ldb, ldd, batchCount,
                strideA, strideB, strideD, epilogue, a, b);
    }

    /** {@return the rows of A as stored} */
    public int rowsA() {
        return transA == Transpose.N ? m : k;
    }

    /** {@return the columns of A as stored} */
    public int colsA() {
        return transA == Transpose.N ? k : m;
    }

    /** {@return the rows of B as stored} */
    public int rowsB() {
        return transB == Transpose.N ? k : n;
    }

    /** {@return the columns of B as stored} */
    public int colsB() {
        return transB == Transpose.N ? n : k;
    }

    /** {@return A's leading dimension in force} */
    public long effectiveLda() {
        return lda == 0 ? rowsA() : lda;
    }

    /** {@return B's leading dimension in force} */
    public long effectiveLdb() {
        return ldb == 0 ? rowsB() : ldb;
    }

    /** {@return D's leading dimension in force} */
    public long effectiveLdd() {
        return ldd == 0 ? m : ldd;
    }

    /** {@return A's batch stride in force, in elements (0 when shared)} */
    public long effectiveStrideA() {
        return stride(strideA, span(rowsA(), colsA(), effectiveLda()));
    }

    /** {@return B's batch stride in force, in elements (0 when shared)} */
    public long effectiveStrideB() {
        return stride(strideB, span(rowsB(), colsB(), effectiveLdb()));
    }

    /** {@return D's batch stride in force, in elements} */
    public long effectiveStrideD() {
        return stride(strideD, span(m, n, effectiveLdd()));
    }

    private static long stride(long stride, long span) {
        return stride == SHARED ? 0 : stride == 0 ? span : stride;
    }

    /** Elements from a matrix's first to its last, plus one. */
    private static long span(long rows, long cols, long ld) {
        return (cols - 1) * ld + rows;
    }

    /** {@return the bytes A's view must hold, the whole batch} */
    public long bytesA() {
        return bytes(span(rowsA(), colsA(), effectiveLda()), effectiveStrideA(), inputType);
    }

    /** {@return the bytes B's view must hold, the whole batch} */
    public long bytesB() {
        return bytes(span(rowsB(), colsB(), effectiveLdb()), effectiveStrideB(), inputType);
    }

    /** {@return the bytes D's view must hold, the whole batch} */
    public long bytesD() {
        return bytes(span(m, n, effectiveLdd()), effectiveStrideD(), outputType);
    }

    /** {@return the bytes the bias view must hold: m elements of the output type} */
    public long bytesBias() {
        return (long) m * outputType.bytes();
    }

    private long bytes(long span, long stride, BlasType type) {
        return Math.multiplyExact(Math.addExact(Math.multiplyExact(batchCount - 1L, stride), span), type.bytes());
    }

    /**
     * Checks the spec as a whole, before any library sees it.
     *
     * @return this spec
     * @throws IllegalArgumentException naming what is wrong: a size below 1, a leading dimension
     *     below its matrix's rows or past cuBLAS's int range, a batch stride that makes two
     *     matrices of one batch overlap (D never shared), types the compute type does not take
     */
    public GemmSpec validate() {
        if (m < 1 || n < 1 || k < 1) {
            throw new IllegalArgumentException("a GEMM needs m, n and k of at least 1, not " + m + " x " + n + " x " + k);
        }
        checkLd("lda", lda, rowsA(), "A is " + rowsA() + " x " + colsA() + " as stored (transA " + transA + ")");
        checkLd("ldb", ldb, rowsB(), "B is " + rowsB() + " x " + colsB() + " as stored (transB " + transB + ")");
        checkLd("ldd", ldd, m, "D is " + m + " x " + n);
        if (batchCount < 1) {
            throw new IllegalArgumentException("batchCount must be at least 1, not " + batchCount);
        }
        if (batchCount > 1) {
            checkStride("strideA", strideA, span(rowsA(), colsA(), effectiveLda()), true);
            checkStride("strideB", strideB, span(rowsB(), colsB(), effectiveLdb()), true);
            checkStride("strideD", strideD, span(m, n, effectiveLdd()), false);
        }
        if (!computeType.inputTypes().contains(inputType)) {
            throw new IllegalArgumentException("compute type " + computeType + " takes inputs of " + computeType.inputTypes()
                    + ", not " + inputType + ": choose another compute type (F32 takes F32, F16 and BF16)");
        }
        if (!computeType.outputTypes(inputType).contains(outputType)) {
            throw new IllegalArgumentException("compute type " + computeType + " with " + inputType + " inputs writes "
                    + computeType.outputTypes(inputType) + ", not " + outputType);
        }
        try {
            bytesA();
            bytesB();
            bytesD();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("the operands of " + this + " overflow a long byte size", e);
        }
        return this;
    }

    private static void checkLd(String name, long ld, int rows, String what) {
        if (ld != 0 && (ld < rows || ld > Integer.MAX_VALUE)) {
            throw new IllegalArgumentException(name + " is " + ld + ", but " + what + ": it must be at least " + rows
                    + " (and at most " + Integer.MAX_VALUE + "), or 0 for packed");
        }
    }

    private static void checkStride(String name, long stride, long span, boolean mayShare) {
        if (stride == SHARED && mayShare) {
            return;
        }
        if (stride != 0 && stride < span) {
            throw new IllegalArgumentException(name + " is " + stride + " elements, but one matrix spans " + span
                    + ": two matrices of the batch would overlap; use at least " + span + " or 0 for packed"
                    + (mayShare ? " (GemmSpec.SHARED to share one)" : ""));
        }
    }

    /**
     * Checks one call's view against what this spec reads or writes through it.
     *
     * @param operand "A", "B", "D" or "bias", for the message
     * @param view the view given
     * @param type the type it must have
     * @param bytes the bytes it must hold at least
     */
    static void checkView(String operand, DeviceView view, BlasType type, long bytes) {
        Objects.requireNonNull(view, operand);
        if (view.elementType() != type.elementType()) {
            throw new IllegalArgumentException(operand + " is a view of " + view.elementType() + ", but the GEMM's "
                    + operand + " is " + type + ": pass buffer.as(ElementType." + type.elementType() + ")");
        }
        if (view.byteSize() < bytes) {
            throw new IllegalArgumentException(operand + " holds " + view.byteSize() + " bytes, but the GEMM reaches "
                    + bytes + " bytes of it (its shape, leading dimension and batch): pass a larger view");
        }
        if ((view.address() & 15) != 0) {
            throw new IllegalArgumentException(operand + " starts at 0x" + Long.toHexString(view.address())
                    + ", not a multiple of 16 bytes: cuBLASLt's algorithm is chosen for 16-byte aligned operands "
                    + "(a buffer's start is; slice at a multiple of 16 bytes)");
        }
    }
}
