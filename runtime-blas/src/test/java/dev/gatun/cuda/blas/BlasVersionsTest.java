package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The libraries' versions against the bindings' (cuBLAS 13.1, cuDNN 9.14), on the simulated libraries. */
class BlasVersionsTest {

    private final BlasWorld w = new BlasWorld();

    @Test
    void aCublasLtOfAnotherMajorIsRefusedTypedAndNothingIsCreated() {
        w.fake.ltVersion = 120905;
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, w::blas);
        assertTrue(e.getMessage().startsWith("cuBLASLt 12.9.5 is installed, but Gatun's bindings are for cuBLASLt 13.1"),
                e.getMessage());
        assertThrows(CudaUnavailableException.class, w::blas, "the refusal is the same on every call");
        assertEquals(0, w.fake.calls("cublasLtCreate") + w.fake.calls("cublasGetProperty"), "nothing past the refusal");
        w.ctx.close();
    }

    @Test
    void aCublasOfAnotherMajorIsRefusedAndANewerMinorWorks() {
        w.fake.ltVersion = 130900;
        w.fake.cublasMajor = 14;
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, w::blas);
        assertTrue(e.getMessage().startsWith("cuBLAS 14.1.0 is installed"), e.getMessage());

        BlasWorld newer = new BlasWorld();
        newer.fake.ltVersion = 130900;
        newer.fake.cublasMinor = 9;
        assertNotNull(newer.blas(), "cuBLAS 13.9 serves bindings for 13.1");
        w.ctx.close();
        newer.close();
    }

    @Test
    void aMissingLibraryIsTheLoadersRefusalOnEveryCall() {
        w.fake.unavailable = new CudaUnavailableException("No cuBLASLt could be loaded. Tried: ...", List.of("a", "b"));
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, w::blas);
        assertEquals(List.of("a", "b"), e.attempts());
        w.ctx.close();
    }

    @Test
    void cudnnOfAnotherMajorRefusesSoftmaxOnlyGemmsStillWork() {
        w.fake.cudnnVersion = 80907;
        Blas blas = w.blas();
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
                () -> blas.softmax(SoftmaxSpec.rows(4, 8, BlasType.F32)));
        assertTrue(e.getMessage().startsWith("cuDNN 8.9.7 is installed, but Gatun's bindings are for cuDNN 9.14"),
                e.getMessage());
        assertEquals(0, w.fake.calls("cudnnCreate"));
        try (Matmul m = blas.matmul(GemmSpec.of(4, 4, 4, BlasType.F32))) {
            m.run(w.ctx.computeStream(), w.matrix(BlasType.F32, 16), w.matrix(BlasType.F32, 16),
                    w.matrix(BlasType.F32, 16));
        }
        assertEquals(1, w.fake.calls("cublasLtMatmul"));
        w.close();
    }
}
