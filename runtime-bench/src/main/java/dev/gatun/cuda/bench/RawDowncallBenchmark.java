package dev.gatun.cuda.bench;

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
 * The floor under Gatun's short calls (issue 11): the same driver calls as
 * {@code MemoryBenchmark.allocateInStreamOrderAndClose} and {@code LaunchBenchmark.recordAndQueryEvent},
 * made as bare FFM downcalls with no owner, no checked layer and no bookkeeping, from the same JVM
 * in the same JMH run. Against the C twin this is what the Java-to-C transition itself costs;
 * against Gatun's rows it is what Gatun's own work costs (for an allocation: the owner object,
 * its Cleaner registration, the close's retirement decision and the counters).
 *
 * <p>This is a measuring stick, not library code: the calls are {@link BareDowncalls}' (static
 * final handles, the same default linker options as Gatun's {@code Downcalls}, on their own
 * primary-context retain), each result checked only by throwing when it is not CUDA_SUCCESS, as
 * a C loop would; {@code compare}'s floor ({@link BareTwin}) times the same calls.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class RawDowncallBenchmark {

    /** Device 0's primary context made current, one stream and one event, all through bare calls. */
    @State(Scope.Thread)
    public static class Driver {
        BareDowncalls.Session session;

        @Setup
        public void open() {
            session = BareDowncalls.Session.open(TwinRow.EVENT_RECORD_QUERY); // a stream and an event
        }

        @TearDown(Level.Iteration)
        public void drain() {
            session.drain();
        }

        @TearDown
        public void close() {
            session.close();
        }
    }

    /** cuMemAllocAsync + cuMemFreeAsync of 1 MiB on one stream: the driver calls of a stream-ordered allocate + close. */
    @Benchmark
    public long streamOrderedAllocateAndFree(Driver d) throws Throwable {
        return BareDowncalls.allocateAndFree(d.session);
    }

    /** cuEventRecord + cuEventQuery: the driver calls of an event record + query. */
    @Benchmark
    public int recordAndQueryEvent(Driver d) throws Throwable {
        return BareDowncalls.recordAndQuery(d.session);
    }
}
