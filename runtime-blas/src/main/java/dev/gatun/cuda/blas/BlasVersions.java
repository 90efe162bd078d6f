package dev.gatun.cuda.blas;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import java.util.List;

/**
 * The installed cuBLASLt, cuBLAS and cuDNN versions against those the bindings were generated for
 * (cuBLAS 13.1, cuDNN 9.14): the same major is required (another major has another ABI: its
 * structs and enums may differ), any minor works (NVIDIA keeps a major's ABI; an older minor may
 * lack a function Gatun does not call). A refusal is a {@link CudaUnavailableException} saying
 * which library, where it was found, its version and the one needed.
 */
final class BlasVersions {

    /** The major version the cuBLAS and cuBLASLt bindings were generated for ({@code CUBLAS_VER_MAJOR}). */
    static final int CUBLAS_MAJOR = Cublas.CUBLAS_VER_MAJOR();
    /** The minor version they were generated for. */
    static final int CUBLAS_MINOR = Cublas.CUBLAS_VER_MINOR();
    /** The major version the cuDNN bindings were generated for ({@code CUDNN_MAJOR}). */
    static final int CUDNN_MAJOR = Cudnn.CUDNN_MAJOR();
    /** The minor version they were generated for. */
    static final int CUDNN_MINOR = Cudnn.CUDNN_MINOR();

    /**
     * One library's version, or why it cannot be used.
     *
     * @param library its name
     * @param version "13.1.0", or null when refused
     * @param refusal why it cannot be used, or null
     */
    record Checked(String library, String version, CudaUnavailableException refusal) {
        /** Throws the refusal, a new one each time, if there is one. */
        void require() {
            if (refusal != null) {
                throw refusal.again();
            }
        }
    }

    private final Checked lt;
    private final Checked blas;

    private BlasVersions(Checked lt, Checked blas) {
        this.lt = lt;
        this.blas = blas;
    }

    Checked cublasLt() {
        return lt;
    }

    Checked cublas() {
        return blas;
    }

    /** Throws unless both cuBLASLt and cuBLAS are usable: cuBLASLt's refusal first (cuBLAS imports it). */
    void requireBlas() {
        lt.require();
        blas.require();
    }

    static BlasVersions read(BlasCalls calls) {
        Checked lt = check("cuBLASLt", () -> {
            long v = calls.cublasLtVersion();
            return new int[] {(int) (v / 10000), (int) (v / 100 % 100), (int) (v % 100)};
        }, CUBLAS_MAJOR, CUBLAS_MINOR);
        Checked blas = lt.refusal() != null
                ? new Checked("cuBLAS", null, new CudaUnavailableException("cuBLAS is not used: it imports cuBLASLt, "
                        + "which is refused:\n" + lt.refusal().getMessage(), lt.refusal().attempts()))
                : check("cuBLAS", () -> new int[] {calls.cublasProperty(BlasCalls.MAJOR),
                        calls.cublasProperty(BlasCalls.MINOR), 0}, CUBLAS_MAJOR, CUBLAS_MINOR);
        return new BlasVersions(lt, blas);
    }

    static Checked readCudnn(BlasCalls calls) {
        return check("cuDNN", () -> {
            long v = calls.cudnnVersion();
            return new int[] {(int) (v / 10000), (int) (v / 100 % 100), (int) (v % 100)};
        }, CUDNN_MAJOR, CUDNN_MINOR);
    }

    @FunctionalInterface
    private interface VersionRead {
        int[] read();
    }

    private static Checked check(String library, VersionRead read, int major, int minor) {
        int[] v;
        try {
            v = read.read();
        } catch (CudaUnavailableException e) {
            return new Checked(library, null, e);
        } catch (RuntimeException e) {
            String message = "reading " + library + "'s version failed: " + e;
            return new Checked(library, null, new CudaUnavailableException(message, List.of(message), e));
        }
        String version = v[0] + "." + v[1] + "." + v[2];
        if (v[0] != major) {
            String message = library + " " + version + " is installed, but Gatun's bindings are for " + library + " "
                    + major + "." + minor + ": a library of another major version has another ABI and is not used. "
                    + "Install " + library + " " + major + ".x, or point Gatun at one (see gatun-blas's README).";
            return new Checked(library, version, new CudaUnavailableException(message, List.of(message)));
        }
        return new Checked(library, version, null);
    }
}
