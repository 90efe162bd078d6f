package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
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
 * Host cost of allocating 1 MiB of device memory and closing it at once: through the context's
 * device pool ({@code pooled}: the block comes back from the pool, a pool hit; {@code unpooled}:
 * the pool is off, so every allocation and close reaches {@code cuMemAlloc} and
 * {@code cuMemFree}), in stream order ({@code cuMemAllocAsync}, freed in stream order by
 * close), and in stream order from a CUDA memory pool of its own ({@code cuMemAllocFromPoolAsync},
 * the pool keeping every freed byte reserved, so that the driver reuses them and the row
 * measures the host's cost). Run with {@code -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class MemoryBenchmark {

    private static final long BYTES = TwinRow.ALLOCATION_BYTES;

    /** Device 0's context, opened with the pool on or off (each parameter runs in its own fork). */
    @State(Scope.Thread)
    public static class Pool {
        @Param({"pooled", "unpooled"})
        public String pool;

        CudaContext context;

        @Setup
        public void open() {
            TwinRow row = switch (pool) {
                case "pooled" -> TwinRow.ALLOC_POOLED;
                case "unpooled" -> TwinRow.ALLOC_UNPOOLED;
                default -> throw new IllegalArgumentException("pool is '" + pool + "'; use pooled or unpooled");
            };
            context = Cuda.system().device(0).context(row.contextOptions());
        }
    }

    /** A stream of device 0's context for stream-ordered allocation, drained after each iteration. */
    @State(Scope.Thread)
    public static class Ordered {
        Stream stream;

        @Setup
        public void open() {
            stream = Cuda.system().device(0).context().createStream();
        }

        @TearDown(Level.Iteration)
        public void drain() {
            stream.synchronize();
        }

        @TearDown
        public void close() {
            stream.synchronize();
            stream.close();
        }
    }

    /** A CUDA memory pool of device 0 that keeps what is freed (release threshold: all), and a stream to allocate on. */
    @State(Scope.Thread)
    public static class FromPool extends Ordered {
        MemoryPool pool;

        @Setup
        public void openPool() {
            pool = Cuda.system().device(0).context()
                    .createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE));
        }

        @TearDown
        public void closePool() {
            pool.close(); // its destroy waits for the frees queued on the stream
        }
    }

    @Benchmark
    public void allocateAndClose(Pool p) {
        p.context.allocate(BYTES).close();
    }

    @Benchmark
    public void allocateInStreamOrderAndClose(Ordered o) {
        o.stream.allocate(BYTES).close();
    }

    @Benchmark
    public void allocateFromPoolAndClose(FromPool p) {
        p.pool.allocate(p.stream, BYTES).close();
    }
}
