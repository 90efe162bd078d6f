package dev.gatun.cuda.blas;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.blas.internal.load.BlasLibrary;
import dev.gatun.cuda.doctor.DoctorSection;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * gatun-blas's section of {@code gatun doctor}'s report ({@link dev.gatun.cuda.doctor.Doctor}
 * finds it with {@link java.util.ServiceLoader}; runtime-core does not depend on this module):
 * for cuBLASLt, cuBLAS and cuDNN, where each was loaded from and its version against the one
 * Gatun's bindings were generated for, or why it is not used (every path tried, or the version
 * refused). Not meant to be called directly: print {@code Doctor.diagnose} instead.
 */
public final class BlasDoctorSection implements DoctorSection {

    /** For {@link java.util.ServiceLoader}. */
    public BlasDoctorSection() {
    }

    @Override
    public void report(Consumer<String> line) {
        report(Blas.runtime(), library -> library.open().origin(), line);
    }

    /** The report over {@code runtime}, with {@code origin} telling where each library was loaded from (or throwing why not). */
    static void report(BlasRuntime runtime, Function<BlasLibrary, String> origin, Consumer<String> line) {
        BlasVersions versions = runtime.versions();
        library("cublasLt: ", BlasLibrary.CUBLASLT, versions.cublasLt(), BlasVersions.CUBLAS_MAJOR + "."
                + BlasVersions.CUBLAS_MINOR, origin, line, "needed by Blas.matmul and Blas.gemm");
        library("cublas:   ", BlasLibrary.CUBLAS, versions.cublas(), BlasVersions.CUBLAS_MAJOR + "."
                + BlasVersions.CUBLAS_MINOR, origin, line, "needed by Blas.gemm");
        library("cudnn:    ", BlasLibrary.CUDNN, runtime.cudnn(), BlasVersions.CUDNN_MAJOR + "." + BlasVersions.CUDNN_MINOR,
                origin, line, "needed only by Blas.softmax");
    }

    private static void library(String label, BlasLibrary library, BlasVersions.Checked checked, String bindings,
            Function<BlasLibrary, String> origin, Consumer<String> line, String neededBy) {
        String where;
        try {
            where = origin.apply(library);
        } catch (CudaUnavailableException e) {
            line.accept(label + "NOT FOUND (" + neededBy + ")");
            indented(e.getMessage(), line);
            return;
        }
        line.accept(label + where);
        if (checked.refusal() != null) {
            line.accept("          NOT USED: " + checked.refusal().getMessage());
        } else {
            line.accept("          version " + checked.version() + " (Gatun's bindings are for " + bindings + ")");
        }
    }

    private static void indented(String text, Consumer<String> line) {
        for (String l : text.split("\n")) {
            line.accept("          " + l);
        }
    }
}
