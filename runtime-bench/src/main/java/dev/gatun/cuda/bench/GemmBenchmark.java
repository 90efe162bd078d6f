package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Gemm;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Matmul;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Host cost of a warm 64x64x64 fp16 GEMM (fp16 out, fp32 accumulation) issued in a loop on one
 * stream, as issue 38's host-overhead row measures it: a cuBLAS GEMM ({@code Gemm.run}: one
 * {@code cublasGemmEx}, the handle staying bound to the stream) and a cuBLASLt matmul
 * ({@code Matmul.run}: one {@code cublasLtMatmul}). Needs cuBLAS 13 and cuBLASLt 13 (gatun-blas).
 * Run with {@code -prof gc}: a warm GEMM must allocate nothing (0 B/op). The GEMMs are tiny, so
 * the host issues them about as fast as the GPU runs them; the stream is drained after each
 * iteration so queued GEMMs never pile up across iterations.
 *
 * <pre>java -jar gatun.jar bench -prof gc 'GemmBenchmark'</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class GemmBenchmark {

    private static final int SIZE = 64;

    private CudaContext context;
    private Stream stream;
    private DeviceBuffer a;
    private DeviceBuffer b;
    private DeviceBuffer d;
    private Gemm gemm;
    private Matmul matmul;
    private DeviceView viewA;
    private DeviceView viewB;
    private DeviceView viewD;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        stream = context.createStream();
        long bytes = 2L * SIZE * SIZE;
        a = context.allocate(bytes);
        b = context.allocate(bytes);
        d = context.allocate(bytes);
        viewA = a.as(BlasType.F16.elementType());
        viewB = b.as(BlasType.F16.elementType());
        viewD = d.as(BlasType.F16.elementType());
        // Inputs set once, so the GEMMs compute on finite numbers (the values do not matter here).
        stream.memset(a.bytes(), (byte) 0x3c); // 0x3c3c: about 1.06 in fp16
        stream.memset(b.bytes(), (byte) 0x3c);
        Blas blas = Blas.of(context);
        GemmSpec spec = GemmSpec.of(SIZE, SIZE, SIZE, BlasType.F16);
        gemm = blas.gemm(spec);
        matmul = blas.matmul(spec);
        blas.prepare(stream); // the workspace, before the first measured GEMM
        stream.synchronize();
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        matmul.close();
        a.close();
        b.close();
        d.close();
        stream.close();
    }

    /** One warm cuBLAS GEMM: {@code cublasGemmEx} alone, the handle already bound to this stream. */
    @Benchmark
    public void cublasGemm() {
        gemm.run(stream, viewA, viewB, viewD);
    }

    /** One warm cuBLASLt matmul: {@code cublasLtMatmul}, with the algorithm chosen at prepare. */
    @Benchmark
    public void cublasLtMatmul() {
        matmul.run(stream, viewA, viewB, viewD);
    }
}
