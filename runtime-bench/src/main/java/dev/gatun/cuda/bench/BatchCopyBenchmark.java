package dev.gatun.cuda.bench;

import dev.gatun.cuda.CopyBatch;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Stream;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The batched-copy rows (issue 24) under JMH: one operation is {@link TwinRow#COPIES} copies of
 * {@link TwinRow#COPY_BYTES} through a {@link CopyBatch} ({@link BatchCopyRun}), uploads or
 * downloads, in one {@code cuMemcpyBatchAsync} or one {@code cuMemcpyAsync} each. Run with
 * {@code -prof gc}: filling and submitting a batch allocates nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class BatchCopyBenchmark {

    /** Direction and path: {@code upload|download} then {@code _batched|_one_at_a_time}. */
    @Param({"upload_one_at_a_time", "upload_batched", "download_one_at_a_time", "download_batched"})
    public String path;

    private Stream stream;
    private BatchCopyRun run;
    private int i;

    @Setup
    public void setUp() {
        CudaContext context = Cuda.system().device(0).context();
        stream = context.createStream();
        run = BatchCopyRun.open(context, stream, path.startsWith("upload"),
                path.endsWith("batched") ? CopyBatch.Submission.BATCHED : CopyBatch.Submission.ONE_AT_A_TIME);
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        run.close();
        stream.close();
    }

    @Benchmark
    public void copies() {
        run.run(i++);
    }
}
