package dev.gatun.cuda.blas;

import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import java.lang.foreign.MemorySegment;

/**
 * The stream the context's one cuDNN handle is bound to, remembered so that a softmax or an
 * attention on the stream the handle already serves makes no {@code cudnnSetStream}: a warm
 * attention is one {@code cudnnBackendExecute}. This object is also the handle's lock (a leaf,
 * taken under the stream's lock): every cuDNN call on the handle (its creation, a plan's build,
 * a softmax, an execute) and every read or change of the binding happens under it. cuDNN takes
 * its workspace per call (in the variant pack), so the stream is the handle's only state here.
 *
 * <p>Why remembering is sound: the handle is Gatun's own and nothing else binds it. The stream is
 * compared by identity, not by its {@code CUstream} address, so a new stream at a reused address
 * is bound again; a closed {@code Stream} can never be submitted to again, so remembering one
 * that closed never skips a binding (it is forgotten when its workspace is released, see
 * {@link Blas}). The binding is forgotten before the call that changes it and after any failed
 * cuDNN call on the handle.
 */
final class CudnnBinding {

    /** The bound stream, null when nothing is remembered. */
    private Stream stream;

    /** Binds {@code handle} to {@code stream} (whose handle is {@code raw}) unless it already is. Under this object's lock. */
    void bind(BlasCalls calls, MemorySegment handle, Stream stream, MemorySegment raw) {
        assert Thread.holdsLock(this);
        if (this.stream == stream) {
            return;
        }
        this.stream = null;
        // Safety: the handle is live (its Blas is open) and the stream open, of the handle's context.
        calls.cudnnBind(handle, raw);
        this.stream = stream;
    }

    /** Forgets the binding: the next call binds the handle again. Under this object's lock. */
    void forget() {
        assert Thread.holdsLock(this);
        stream = null;
    }

    /** Forgets the binding if it names {@code s} (closing). */
    synchronized void forget(Stream s) {
        if (stream == s) {
            stream = null;
        }
    }
}
