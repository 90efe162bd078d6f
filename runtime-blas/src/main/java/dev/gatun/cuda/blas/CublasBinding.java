package dev.gatun.cuda.blas;

import dev.gatun.cuda.blas.internal.api.BlasCalls;
import java.lang.foreign.MemorySegment;

/**
 * The stream and workspace the context's one cuBLAS handle is bound to, remembered so that a GEMM
 * on the stream the handle already serves makes no {@code cublasSetStream} or
 * {@code cublasSetWorkspace}: a warm GEMM is one {@code cublasGemmEx}, where C that binds per call
 * makes three. This object is also the handle's lock: every cuBLAS call on the handle, every
 * read or change of the binding, the count of GEMMs and the handle's destruction happen under it.
 * A GEMM takes it before its stream's lock ({@link Gemm#run}); the {@link Blas}'s monitor is taken
 * before it, never under it.
 *
 * <p>Why remembering is sound: the handle is Gatun's own and nothing else binds it, so its
 * binding changes only here. It is forgotten whenever it could be wrong: before the two calls
 * that change it (so a failed {@code cublasSetWorkspace} after a successful
 * {@code cublasSetStream} leaves nothing remembered), after any failed call on the handle, and
 * when the workspace is replaced or released (its stream closed, or the BLAS closed) so the
 * binding never names memory Gatun may free. The workspace is compared by identity: a new one of
 * the same stream, even at a reused address, is bound again.
 */
final class CublasBinding {

    /** The bound stream's address, 0 when nothing is remembered. */
    private long stream;
    /** The bound workspace, null when nothing is remembered. */
    private Blas.Workspace workspace;
    /** GEMMs submitted on the handle (a plain count: every one is counted under this lock). */
    private long gemms;

    /**
     * Binds {@code handle} to {@code stream} and {@code w} unless it already is. Under this
     * object's lock, immediately before the call that uses the binding.
     */
    void bind(BlasCalls calls, MemorySegment handle, MemorySegment stream, Blas.Workspace w) {
        assert Thread.holdsLock(this);
        long address = stream.address();
        if (workspace == w && this.stream == address) {
            return;
        }
        forget();
        // Safety: the handle is live (its Blas is open), the stream is open and of the handle's
        // context, and the workspace an open buffer listed on that stream for this submission.
        calls.cublasBind(handle, stream, w.address(), w.bytes());
        this.stream = address;
        this.workspace = w;
    }

    /** Forgets the binding: the next GEMM binds the handle again. Under this object's lock. */
    void forget() {
        assert Thread.holdsLock(this);
        stream = 0;
        workspace = null;
    }

    /** Forgets the binding if it names {@code w} (being replaced or released). */
    synchronized void forget(Blas.Workspace w) {
        if (workspace == w) {
            forget();
        }
    }

    /** Counts a GEMM submitted. Under this object's lock. */
    void counted() {
        assert Thread.holdsLock(this);
        gemms++;
    }

    /** {@return the GEMMs submitted so far} */
    synchronized long gemms() {
        return gemms;
    }

    /** {@return the bound stream's address, 0 when none is remembered (for tests)} */
    synchronized long stream() {
        return stream;
    }
}
