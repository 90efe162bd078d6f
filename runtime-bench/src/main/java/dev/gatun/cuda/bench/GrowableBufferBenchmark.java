package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.GrowableBuffer;
import dev.gatun.cuda.GrowableBufferOptions;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Host cost of growing a {@link GrowableBuffer} (virtual memory management) by one chunk and
 * shrinking it back: {@code cuMemCreate}, {@code cuMemMap} and {@code cuMemSetAccess} for the
 * growth; for the shrink, the ordering every synchronous operation pays (an idle context: no
 * stream has new work, so only the copy stream is synchronized), then {@code cuMemUnmap} and
 * {@code cuMemRelease}. The buffer keeps one chunk mapped throughout, so the reservation and the
 * base address stay. {@code resizeWithinAChunk} is the bookkeeping alone: a growth and a shrink
 * inside the chunks already mapped make no driver call.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class GrowableBufferBenchmark {

    private CudaContext context;
    private GrowableBuffer buffer;
    private long chunk;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        buffer = context.reserveGrowable(GrowableBufferOptions.exactly(64L << 20));
        chunk = buffer.chunkBytes();
        buffer.grow(chunk);
    }

    @TearDown
    public void tearDown() {
        buffer.close();
        context.synchronize();
    }

    @Benchmark
    public void growOneChunkAndShrinkBack() {
        buffer.grow(2 * chunk);
        buffer.shrink(chunk);
    }

    @Benchmark
    public void resizeWithinAChunk() {
        buffer.grow(chunk);
        buffer.shrink(chunk - 4);
        buffer.grow(chunk);
    }
}
