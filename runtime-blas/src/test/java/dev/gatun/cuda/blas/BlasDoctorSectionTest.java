package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.blas.internal.load.BlasLibrary;
import dev.gatun.cuda.doctor.DoctorSection;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** What gatun doctor prints for the BLAS libraries, on the simulated ones. */
class BlasDoctorSectionTest {

    @Test
    void eachLibraryIsNamedWithItsVersionOrWhyItIsNotUsed() {
        BlasWorld w = new BlasWorld();
        w.fake.cudnnVersion = 80907;
        List<String> lines = new ArrayList<>();
        BlasDoctorSection.report(w.runtime, library -> {
            if (library == BlasLibrary.CUBLAS) {
                throw new CudaUnavailableException("No cuBLAS could be loaded. Tried:\n  - /x/libcublas.so.13 does not "
                        + "exist", List.of());
            }
            return "/usr/local/cuda/lib64/" + library + " (directory /usr/local/cuda/lib64)";
        }, lines::add);
        assertEquals(List.of("cublasLt: /usr/local/cuda/lib64/CUBLASLT (directory /usr/local/cuda/lib64)",
                "          version 13.1.0 (Gatun's bindings are for 13.1)",
                "cublas:   NOT FOUND (needed by Blas.gemm)",
                "          No cuBLAS could be loaded. Tried:",
                "            - /x/libcublas.so.13 does not exist",
                "cudnn:    /usr/local/cuda/lib64/CUDNN (directory /usr/local/cuda/lib64)",
                "          NOT USED: cuDNN 8.9.7 is installed, but Gatun's bindings are for cuDNN 9.14: a library of "
                        + "another major version has another ABI and is not used. Install cuDNN 9.x, or point Gatun at "
                        + "one (see gatun-blas's README)."), lines);
        w.ctx.close();
    }

    @Test
    void theDoctorFindsTheSectionOnTheClassPath() {
        List<String> found = new ArrayList<>();
        ServiceLoader.load(DoctorSection.class).forEach(s -> found.add(s.getClass().getName()));
        assertEquals(List.of(BlasDoctorSection.class.getName()), found);
    }
}
