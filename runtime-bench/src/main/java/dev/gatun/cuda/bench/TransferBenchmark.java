package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * Bandwidth of 256 MiB transfers between pinned host memory and the device on one stream: one
 * operation waits for the buffer's previous transfer ({@code awaitTransfer}) and queues the next
 * asynchronous copy, so the loop runs at the copy engine's pace (a transfer itself no longer
 * waits for the previous one, and JMH would count copies queued, not done). JMH reports operations per second
 * and, as the secondary metric {@code gigabytes}, GB/s (10^9 bytes per second). Run with
 * {@code -prof gc}: a transfer allocates nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class TransferBenchmark {

    private static final long BYTES = TwinRow.TRANSFER_BYTES;

    /** Gigabytes moved; JMH divides the count by the iteration's time, giving GB/s. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Moved {
        public double gigabytes;

        @Setup(Level.Iteration)
        public void reset() {
            gigabytes = 0;
        }
    }

    private Stream stream;
    private PinnedBuffer pinned;
    private DeviceBuffer device;
    private DeviceView whole;

    @Setup
    public void setUp() {
        CudaContext context = Cuda.system().device(0).context();
        stream = context.createStream();
        pinned = context.allocatePinned(BYTES);
        device = context.allocate(BYTES);
        whole = device.bytes();
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        pinned.close();
        device.close();
        stream.close();
    }

    @Benchmark
    public void uploadPinned(Moved moved) {
        pinned.awaitTransfer();
        stream.upload(whole, pinned, 0);
        moved.gigabytes += BYTES / 1e9;
    }

    @Benchmark
    public void downloadPinned(Moved moved) {
        pinned.awaitTransfer();
        stream.download(pinned, 0, whole);
        moved.gigabytes += BYTES / 1e9;
    }
}
