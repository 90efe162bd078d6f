package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.MappedWord;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.WriteFlag;
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
 * Issue 24: the latency from a stream write of a {@link MappedWord} ({@code cuStreamWriteValue32},
 * default flags) to the host's acquire reads seeing it, the row {@code mapped_word_seen} of the C
 * comparison (beside {@code readback_4b}, {@link CopyBenchmark#readBackFourBytes}). Run with
 * {@code -prof gc}: the write and the spin allocate nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class MappedWordBenchmark {

    private Stream stream;
    private MappedWord word;
    private int written;

    @Setup
    public void setUp() {
        CudaContext context = Cuda.system().device(0).context();
        stream = context.createStream();
        word = context.allocateMappedWord();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        word.close();
        stream.close();
    }

    /** Writes the next value on the stream and spins on acquire reads until the host sees it. */
    @Benchmark
    public int writeUntilSeen() {
        int v = ++written;
        stream.memOps().write32(word, v, WriteFlag.DEFAULT);
        while (word.getInt() != v) {
            Thread.onSpinWait();
        }
        return v;
    }
}
