package dev.gatun.cuda.bench;

import dev.gatun.cuda.nvtx.Nvtx;
import dev.gatun.cuda.nvtx.NvtxDomain;
import dev.gatun.cuda.nvtx.NvtxLabel;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * What NVTX costs a program when no tool is attached (issue 39): the calls an engine leaves in
 * its code, run with {@code NVTX_INJECTION64_PATH} unset, beside the same loop body without them.
 * CPU only, no device: {@code java -cp gatun.jar org.openjdk.jmh.Main NvtxBenchmark -prof gc}.
 * Each call returns once it has read a constant the JIT folds ({@code NvtxCalls.ATTACHED}); a
 * label's check that it belongs to the domain is the one thing left, and nothing is allocated
 * (0 B/op under {@code -prof gc}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class NvtxBenchmark {

    /** A domain and its labels, built once as an engine would; refuses to run with a tool attached. */
    @State(Scope.Thread)
    public static class Labels {
        NvtxDomain domain;
        NvtxLabel step;
        long counter;

        @Setup
        public void build() {
            if (Nvtx.attached()) {
                throw new IllegalStateException("NvtxBenchmark measures NVTX with no tool attached: unset "
                        + "NVTX_INJECTION64_PATH");
            }
            domain = Nvtx.domain("bench");
            step = domain.label("step");
        }
    }

    /** The loop body alone: the floor the rows below are read against. */
    @Benchmark
    public long plainLoop(Labels l) {
        return ++l.counter;
    }

    /** The same body inside a push/pop range of a label, as try-with-resources. */
    @Benchmark
    public long pushPop(Labels l) {
        try (var _ = l.domain.push(l.step)) {
            return ++l.counter;
        }
    }

    /** The same body inside a push/pop range with a payload. */
    @Benchmark
    public long pushPopWithPayload(Labels l) {
        try (var _ = l.domain.push(l.step, l.counter)) {
            return ++l.counter;
        }
    }

    /** The same body inside a start/end range. */
    @Benchmark
    public long startEnd(Labels l) {
        long range = l.domain.start(l.step);
        long r = ++l.counter;
        l.domain.end(range);
        return r;
    }

    /** The same body after a marker. */
    @Benchmark
    public long mark(Labels l) {
        l.domain.mark(l.step);
        return ++l.counter;
    }
}
