package dev.gatun.cuda.blas;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.ForeignWork;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;

/**
 * A cuBLAS GEMM prepared for one {@link GemmSpec} ({@link Blas#gemm}): {@code cublasGemmEx}, or
 * {@code cublasGemmStridedBatchedEx} for a batch, with the spec's compute type and cuBLAS's
 * default algorithm choice. D is also C: {@code D = alpha op(A) op(B) + beta D}.
 *
 * <p>A run binds the context's cuBLAS handle to the stream and its workspace (only when the last
 * GEMM of the context left it bound to others) and calls inside one {@link Stream#submitForeign},
 * all under the handle's lock ({@link CublasBinding}), which it takes before the stream's: no
 * allocation on the host or the device once warm, so it can be captured. A warm GEMM on the
 * stream the handle is bound to is one {@code cublasGemmEx}. Holds no native resource (alpha and
 * beta are the garbage collector's memory). Runs from several threads are serialized by that
 * lock, which also guards this GEMM's operand slots (two runs at once would pass each other's
 * pointers, listed on the other's stream only): the one monitor serves both, where a monitor of
 * its own would add an enter and an exit (two compare-and-sets) to every warm GEMM.
 */
public final class Gemm {

    private static final int A = 0;
    private static final int B = 1;
    private static final int D = 2;
    private static final int WORKSPACE = 3;

    private final Blas blas;
    private final BlasCalls calls;
    private final GemmSpec spec;
    private final Scalars scalars;
    private final Operands operands = new Operands(4);
    private final ForeignWork work = this::submit;
    private Blas.Workspace workspace;
    private MemorySegment pointerA;
    private MemorySegment pointerB;
    private MemorySegment pointerD;

    Gemm(Blas blas, GemmSpec spec) {
        if (spec.epilogue() != Epilogue.NONE) {
            throw new IllegalArgumentException("cuBLAS's GEMM has no epilogue (" + spec.epilogue() + "): prepare it with "
                    + "Blas.matmul (cuBLASLt) instead");
        }
        this.blas = blas;
        this.calls = blas.calls();
        this.spec = spec;
        this.scalars = Scalars.of(spec.computeType().scaleType(), spec.alpha(), spec.beta());
    }

    /** {@return the spec this GEMM was prepared for} */
    public GemmSpec spec() {
        return spec;
    }

    /**
     * Queues the GEMM on {@code stream}.
     *
     * @param stream a stream of the context
     * @param a A, of the spec's input type, holding at least {@link GemmSpec#bytesA()} bytes
     * @param b B, likewise
     * @param d D, of the output type, at least {@link GemmSpec#bytesD()} bytes
     * @throws IllegalArgumentException when a view's type, size or alignment does not fit the spec
     * @throws BlasException when cuBLAS refuses the call
     */
    public void run(Stream stream, DeviceView a, DeviceView b, DeviceView d) {
        GemmSpec.checkView("A", a, spec.inputType(), spec.bytesA());
        GemmSpec.checkView("B", b, spec.inputType(), spec.bytesB());
        GemmSpec.checkView("D", d, spec.outputType(), spec.bytesD());
        Blas.Workspace w = blas.workspace(stream); // may make it, under the Blas's monitor: before the handle's lock
        CublasBinding binding = blas.cublasBinding;
        synchronized (binding) { // see the class comment; the Blas's close destroys the handle under it
            blas.checkOpen();
            pointerA = operands.set(A, a);
            pointerB = operands.set(B, b);
            pointerD = operands.set(D, d);
            operands.views[WORKSPACE] = w.view();
            workspace = w;
            try {
                stream.submitForeign(work, operands.views);
            } finally {
                workspace = null;
                operands.clear();
            }
            binding.counted();
        }
    }

    /**
     * The library calls, under the stream's lock with the context current (Stream.submitForeign),
     * inside the handle's lock, which {@link #run} holds (not taken again here: entered under the
     * stream's lock, a monitor held below another is no cheap recursive enter).
     */
    private void submit(MemorySegment stream) {
        CublasBinding binding = blas.cublasBinding;
        assert Thread.holdsLock(binding);
        Blas.Workspace w = workspace;
        // Safety: the views were checked against the spec (types, the bytes the shape, leading
        // dimensions and strides reach, alignment) and are open buffers of this context listed on
        // this stream, as is the workspace. The handle is live (the Blas was open under its lock,
        // which its close takes to destroy it). The handle's stream and workspace are set (when
        // they differ from the last GEMM's) and used under its lock, so no other GEMM rebinds it
        // in between; alpha and beta are host scalars of the compute type's scale type (the
        // handle's default host pointer mode), their memory kept alive by this Gemm (the fence
        // below: Scalars).
        boolean called = false;
        try {
            binding.bind(calls, blas.cublasHandle(), stream, w);
            gemm();
            called = true;
        } finally {
            if (!called) {
                binding.forget(); // whatever failed may have left the handle bound otherwise
            }
            Reference.reachabilityFence(this);
        }
    }

    /** The GEMM itself, on the bound handle (see {@link #submit} for why each argument is valid). */
    private void gemm() {
        int algo = Cublas.CUBLAS_GEMM_DEFAULT();
        if (spec.batchCount() == 1) {
            calls.gemmEx(blas.cublasHandle(), spec.transA().code(), spec.transB().code(), spec.m(), spec.n(), spec.k(),
                    scalars.alpha(), pointerA, spec.inputType().cudaDataType(), (int) spec.effectiveLda(), pointerB,
                    spec.inputType().cudaDataType(), (int) spec.effectiveLdb(), scalars.beta(), pointerD,
                    spec.outputType().cudaDataType(), (int) spec.effectiveLdd(), spec.computeType().code(), algo);
        } else {
            calls.gemmStridedBatchedEx(blas.cublasHandle(), spec.transA().code(), spec.transB().code(), spec.m(),
                    spec.n(), spec.k(), scalars.alpha(), pointerA, spec.inputType().cudaDataType(),
                    (int) spec.effectiveLda(), spec.effectiveStrideA(), pointerB, spec.inputType().cudaDataType(),
                    (int) spec.effectiveLdb(), spec.effectiveStrideB(), scalars.beta(), pointerD,
                    spec.outputType().cudaDataType(), (int) spec.effectiveLdd(), spec.effectiveStrideD(),
                    spec.batchCount(), spec.computeType().code(), algo);
        }
    }

    @Override
    public String toString() {
        return "Gemm[" + spec + "]";
    }
}
