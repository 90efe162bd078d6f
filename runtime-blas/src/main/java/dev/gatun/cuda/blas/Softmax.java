package dev.gatun.cuda.blas;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.ForeignWork;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;

/**
 * A cuDNN softmax forward prepared for one {@link SoftmaxSpec} ({@link Blas#softmax}):
 * {@code cudnnSoftmaxForward} with one packed NCHW descriptor for x and y. A run binds the
 * context's cuDNN handle to the stream under its lock (unless it is bound to it already:
 * {@link CudnnBinding}), inside one {@link Stream#submitForeign};
 * softmax needs no workspace. Runs from several threads are serialized (its operand slots are its
 * own), and a close waits for a run in progress: a descriptor destroyed under cuDNN's call would
 * be a crash, not an exception.
 */
public final class Softmax implements AutoCloseable {

    private final Blas blas;
    private final BlasCalls calls;
    private final SoftmaxSpec spec;
    private final MemorySegment handle;
    private final MemorySegment tensor;
    private final Scalars scalars;
    private final Operands operands = new Operands(2);
    private final ForeignWork work = this::submit;
    private MemorySegment pointerX;
    private MemorySegment pointerY;
    /** The stream of the run in progress, for the handle's binding. */
    private Stream runStream;
    private boolean closed;

    Softmax(Blas blas, SoftmaxSpec spec) {
        this.blas = blas;
        this.calls = blas.calls();
        this.spec = spec;
        this.handle = blas.cudnnHandle();
        this.tensor = calls.tensor4d(Cudnn.CUDNN_TENSOR_NCHW(), spec.type().cudnnDataType(), spec.n(), spec.c(),
                spec.h(), spec.w());
        this.scalars = Scalars.of(BlasType.F32, 1f, 0f); // cuDNN's scales are floats for half, bfloat16 and float data
    }

    /** {@return the spec this softmax was prepared for} */
    public SoftmaxSpec spec() {
        return spec;
    }

    /**
     * Queues {@code y = softmax(x)} on {@code stream}.
     *
     * @param stream a stream of the context
     * @param x the input, of the spec's type, at least {@link SoftmaxSpec#bytes()} bytes
     * @param y the output, likewise (may be x: cuDNN computes in place)
     * @throws IllegalArgumentException when a view's type, size or alignment does not fit
     * @throws BlasException when cuDNN refuses the call
     */
    public synchronized void run(Stream stream, DeviceView x, DeviceView y) { // see the class comment
        if (closed) {
            throw new IllegalStateException("this softmax is closed");
        }
        blas.checkOpen();
        GemmSpec.checkView("x", x, spec.type(), spec.bytes());
        GemmSpec.checkView("y", y, spec.type(), spec.bytes());
        pointerX = operands.set(0, x);
        pointerY = operands.set(1, y);
        runStream = stream;
        try {
            stream.submitForeign(work, operands.views);
        } finally {
            runStream = null;
            operands.clear();
        }
        blas.softmaxes.increment();
    }

    private void submit(MemorySegment stream) {
        int algo = spec.log() ? Cudnn.CUDNN_SOFTMAX_LOG() : Cudnn.CUDNN_SOFTMAX_ACCURATE();
        int mode = spec.mode() == SoftmaxSpec.Mode.INSTANCE ? Cudnn.CUDNN_SOFTMAX_MODE_INSTANCE()
                : Cudnn.CUDNN_SOFTMAX_MODE_CHANNEL();
        // Safety: the descriptor is live and describes both views, checked against the spec and
        // listed on this stream; the handle's stream is set (or known set) and used under its lock; the scalars'
        // memory is kept alive by this softmax (the fence: Scalars).
        synchronized (blas.cudnnBinding) {
            try {
                blas.cudnnBinding.bind(calls, handle, runStream, stream);
                calls.softmax(handle, algo, mode, scalars.alpha(), tensor, pointerX, scalars.beta(), tensor, pointerY);
            } catch (RuntimeException e) {
                blas.cudnnBinding.forget();
                throw e;
            } finally {
                Reference.reachabilityFence(this);
            }
        }
    }

    /** Destroys the descriptor, after a run in progress on another thread has queued its work. Idempotent. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            calls.tensorDestroy(tensor);
        }
    }
}
