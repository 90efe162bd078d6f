package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
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
 * Host cost of small copies: asynchronous ones on one stream (device to device, and a fenced
 * upload through a pinned buffer after a wait for that buffer's previous transfer, so the upload
 * loop is paced by the copy engine: a transfer itself no longer waits for the previous one), and a
 * synchronous 4-byte read into an
 * {@code int[]}, alone and after an asynchronous copy on another stream that it must be ordered
 * after. Run with {@code -prof gc}: the asynchronous copies must allocate nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class CopyBenchmark {

    private static final int BYTES = 4096;

    private Stream stream;
    private DeviceBuffer a;
    private DeviceBuffer b;
    private PinnedBuffer pinned;
    private DeviceView from;
    private DeviceView to;
    private DeviceView word;
    private final int[] host = new int[1];

    @Setup
    public void setUp() {
        CudaContext context = Cuda.system().device(0).context();
        stream = context.createStream();
        a = context.allocate(BYTES);
        b = context.allocate(BYTES);
        pinned = context.allocatePinned(BYTES);
        from = a.bytes();
        to = b.bytes();
        word = b.asInts().slice(0, 1);
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        pinned.close();
        a.close();
        b.close();
        stream.close();
    }

    @Benchmark
    public void copyDeviceToDeviceAsync() {
        stream.copy(to, from);
    }

    @Benchmark
    public void uploadPinnedAsync() {
        pinned.awaitTransfer();
        stream.upload(from, pinned, 0);
    }

    /** A synchronous 4-byte read with nothing new queued on the context: no fence is needed. */
    @Benchmark
    public int readBackFourBytes() {
        word.copyTo(host);
        return host[0];
    }

    /** An asynchronous copy on another stream, then a synchronous read ordered after it (one fence). */
    @Benchmark
    public int copyThenReadBackFourBytes() {
        stream.copy(to, from);
        word.copyTo(host);
        return host[0];
    }
}
