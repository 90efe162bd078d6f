package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import org.junit.jupiter.api.Test;

/**
 * Shapes, leading dimensions, transposes, batch strides and types are checked before any library
 * sees them: each refusal is an IllegalArgumentException naming what to fix, and the simulated
 * libraries saw no GEMM call.
 */
class BlasArgumentChecksTest {

    private final BlasWorld w = new BlasWorld();

    private static void refused(String expected, Runnable r) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        assertTrue(e.getMessage().contains(expected), "the message names the problem: " + e.getMessage());
    }

    @Test
    void specsAreValidatedAsAWhole() {
        GemmSpec s = GemmSpec.of(8, 4, 2, BlasType.F16);
        refused("at least 1", () -> GemmSpec.of(0, 4, 2, BlasType.F16).validate());
        refused("lda is 4", () -> s.withLeadingDimensions(4, 0, 0).validate()); // A is 8 x 2
        refused("ldb is 1", () -> s.withLeadingDimensions(0, 1, 0).validate()); // B is 2 x 4
        refused("ldd is 7", () -> s.withLeadingDimensions(0, 0, 7).validate());
        // Transposed, A is stored 2 x 8: lda 2 is valid then, and 1 is not.
        GemmSpec t = s.withTranspose(Transpose.T, Transpose.N);
        assertEquals(2, t.withLeadingDimensions(2, 0, 0).validate().effectiveLda());
        refused("lda is 1", () -> t.withLeadingDimensions(1, 0, 0).validate());
        refused("batchCount", () -> s.withBatch(0, 0, 0, 0).validate());
        refused("strideA is 15", () -> s.withBatch(3, 15, 0, 0).validate()); // A spans 16 elements
        refused("strideD is -1", () -> s.withBatch(3, 0, 0, GemmSpec.SHARED).validate()); // D is never shared
        assertEquals(0, s.withBatch(3, GemmSpec.SHARED, 0, 0).validate().effectiveStrideA(), "a shared A");
        refused("takes inputs of [F16]", () -> GemmSpec.of(8, 4, 2, BlasType.BF16).withComputeType(ComputeType.F16)
                .validate());
        refused("writes [F16]", () -> s.withComputeType(ComputeType.F16).withOutputType(BlasType.F32).validate());
        assertEquals(BlasType.F32, s.withOutputType(BlasType.F32).validate().outputType(), "fp16 in, fp32 out");
        refused("TF32", () -> GemmSpec.of(2, 2, 2, BlasType.F16).withComputeType(ComputeType.F32_FAST_TF32).validate());
    }

    @Test
    void theBytesAViewMustHoldFollowTheShapeLeadingDimensionTransposeAndBatch() {
        GemmSpec s = GemmSpec.of(8, 4, 2, BlasType.F16);
        assertEquals(8 * 2 * 2, s.bytesA());
        assertEquals(((2 - 1) * 10 + 8) * 2, s.withLeadingDimensions(10, 0, 0).bytesA(), "the last column ends at row 8");
        // Transposed A is 2 x 8 as stored, with lda 2: the same elements.
        assertEquals(8 * 2 * 2, s.withTranspose(Transpose.T, Transpose.N).bytesA());
        // Three GEMMs 20 elements apart: two strides, then one matrix of 16.
        assertEquals((2 * 20 + 16) * 2, s.withBatch(3, 20, 0, 0).bytesA());
        assertEquals(16 * 2, s.withBatch(3, GemmSpec.SHARED, 0, 0).bytesA(), "a shared A is one matrix");
        assertEquals(3 * 32 * 4, s.withOutputType(BlasType.F32).withBatch(3, 0, 0, 0).bytesD());
    }

    @Test
    void viewsAreCheckedBeforeAnyLibraryCall() {
        Blas blas = w.blas();
        GemmSpec s = GemmSpec.of(8, 4, 2, BlasType.F16).withOutputType(BlasType.F32);
        DeviceView a = w.matrix(BlasType.F16, 16);
        DeviceView b = w.matrix(BlasType.F16, 8);
        DeviceView d = w.matrix(BlasType.F32, 32);
        try (Stream stream = w.ctx.createStream(); Matmul matmul = blas.matmul(s)) {
            Gemm gemm = blas.gemm(s);
            refused("A is a view of FLOAT", () -> matmul.run(stream, a.buffer().asFloats(), b, d));
            refused("D is a view of HALF", () -> gemm.run(stream, a, b, w.matrix(BlasType.F16, 32)));
            refused("B holds 14 bytes", () -> matmul.run(stream, a, b.slice(0, 7), d));
            refused("not a multiple of 16", () -> gemm.run(stream, w.matrix(BlasType.F16, 24).slice(1, 16), b, d));
            refused("adds a bias", () -> blas.matmul(s.withEpilogue(Epilogue.RELU_BIAS)).run(stream, a, b, d));
            refused("takes no bias", () -> matmul.run(stream, a, b, d, w.matrix(BlasType.F32, 8)));
            refused("bias holds 16 bytes", () -> blas.matmul(s.withEpilogue(Epilogue.BIAS)).run(stream, a, b, d,
                    w.matrix(BlasType.F32, 4)));
            refused("no epilogue", () -> blas.gemm(s.withEpilogue(Epilogue.GELU)));
            assertEquals(0, w.fake.calls("cublasLtMatmul") + w.fake.calls("cublasGemmEx"), "a library saw a refused call");
            assertEquals(0, blas.counters().workspaces(), "a refused call allocated a workspace");
        }
    }
}
