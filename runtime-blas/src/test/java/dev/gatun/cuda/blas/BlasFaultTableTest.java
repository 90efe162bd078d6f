package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One row per library function this module calls ({@link FakeBlasApi#FUNCTIONS}): the function
 * fails with a status, the operation that calls it throws a {@link BlasException} carrying the
 * library's status name and the function; once the function works again the context still runs
 * every operation; and once everything is closed no handle, descriptor or device buffer is left.
 */
class BlasFaultTableTest {

    static List<String> functions() {
        return FakeBlasApi.FUNCTIONS;
    }

    /** Every operation of the module, once: handles, a matmul with a bias, GEMMs single and batched, a softmax, an attention. */
    private static void everything(BlasWorld w, Stream s, DeviceView a, DeviceView b, DeviceView d, DeviceView bias) {
        Blas blas = w.blas();
        GemmSpec spec = GemmSpec.of(16, 16, 16, BlasType.F32);
        try (Matmul m = blas.matmul(spec.withEpilogue(Epilogue.RELU_BIAS).withBatch(2, 0, 0, 0))) {
            m.run(s, a, b, d, bias);
        }
        blas.gemm(spec).run(s, a, b, d);
        blas.gemm(spec.withBatch(2, 0, 0, 0)).run(s, a, b, d);
        try (Softmax softmax = blas.softmax(SoftmaxSpec.rows(16, 16, BlasType.F32))) {
            softmax.run(s, a, d);
        }
        // Q, K, V and O of 1 x 1 x 16 x 16 halves each: 512 bytes, as the F32 views of 128 floats.
        try (Attention attention = blas.attention(AttentionSpec.of(1, 1, 16, 16, 16, BlasType.F16).causal())) {
            DeviceView half = a.buffer().as(BlasType.F16.elementType());
            attention.run(s, half, b.buffer().as(BlasType.F16.elementType()), half, d.buffer().as(
                    BlasType.F16.elementType()));
        }
    }

    @ParameterizedTest
    @MethodSource("functions")
    void aFailingCallIsATypedExceptionNamingTheStatusAndLeavesNothingBehind(String function) {
        BlasWorld w = new BlasWorld();
        Stream s = w.ctx.createStream();
        DeviceView a = w.matrix(BlasType.F32, 512);
        DeviceView b = w.matrix(BlasType.F32, 512);
        DeviceView d = w.matrix(BlasType.F32, 512);
        DeviceView bias = w.matrix(BlasType.F32, 16);
        boolean cudnn = function.startsWith("cudnn");
        int status = cudnn ? 3 : 7;
        w.fake.fail(function, status);
        BlasException e = assertThrows(BlasException.class, () -> everything(w, s, a, b, d, bias));
        assertEquals(status, e.status());
        assertEquals(cudnn ? "CUDNN_STATUS_BAD_PARAM" : "CUBLAS_STATUS_INVALID_VALUE", e.statusName());
        assertEquals(cudnn ? "cuDNN" : function.startsWith("cublasLt") ? "cuBLASLt" : "cuBLAS", e.library());
        assertTrue(function.startsWith(e.operation()) || e.operation().startsWith(function.replace("_v2", "")),
                "the exception names " + function + ": " + e.getMessage());

        w.fake.fail(function, 0);
        everything(w, s, a, b, d, bias); // the context and its BLAS still work
        s.close();
        w.close();
        assertEquals(0, w.fake.liveObjects(), "a handle or descriptor was left after " + function + " failed");
        assertEquals(0, w.sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), w.sim.gpu.violations());
    }
}
