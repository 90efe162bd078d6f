package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MappedWord;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Issue 24: one host-GPU round trip over two {@link MappedWord}s, the row
 * {@code mapped_word_round_trip} of the C comparison: the host's release write of ping, one GPU
 * thread's answer in pong, the host's acquire reads seeing it. Each invocation launches the
 * ping-pong kernel (twins.cu's {@code pingpong}, outside the timing) for exactly
 * {@value #ROUND_TRIPS} pings, then makes them. Run with {@code -prof gc}: the round trips
 * allocate nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class MappedWordRoundTripBenchmark {

    /** Round trips per invocation: enough that the kernel's start, inside the first, weighs little. */
    static final int ROUND_TRIPS = 1000;

    /** twins.cu's {@code pingpong}, which the twins load from the compiled file (this jar has no twins.cu). */
    private static final String SOURCE = """
            extern "C" __global__ void pingpong(volatile int* ping, volatile int* pong, int n) {
                for (int i = 1; i <= n; i++) {
                    long long waiting_since = clock64();
                    while (*ping != i) {
                        if (clock64() - waiting_since > (1LL << 33)) {
                            *pong = -1;
                            __threadfence_system();
                            return;
                        }
                    }
                    *pong = i;
                    __threadfence_system();
                }
            }
            """;

    private CudaContext context;
    private Stream answering;
    private Kernel pingpong;
    private MappedWord ping;
    private MappedWord pong;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        answering = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-pingpong", SOURCE,
                CompileOptions.builder(CompileTarget.ptx(context.device().capabilities())).build(), "pingpong");
        pingpong = context.modules().kernel("bench-pingpong", "pingpong");
        ping = context.allocateMappedWord();
        pong = context.allocateMappedWord();
    }

    /** Clears both words (the kernel counts from 1), then starts the kernel for this invocation's pings. */
    @Setup(Level.Invocation)
    public void startKernel() {
        ping.setInt(0);
        pong.setInt(0);
        pingpong.prepare(LaunchConfig.of(1, 1), KernelArg.address(ping.deviceAddress()),
                KernelArg.address(pong.deviceAddress()), KernelArg.i32(ROUND_TRIPS)).launch(answering);
    }

    /** The kernel has answered every ping: wait for it to return before the words are touched again. */
    @TearDown(Level.Invocation)
    public void awaitKernel() {
        answering.synchronize();
    }

    @TearDown
    public void tearDown() {
        answering.synchronize();
        ping.close();
        pong.close();
        pingpong.close();
        answering.close();
    }

    /** {@value #ROUND_TRIPS} round trips; the time reported is one. */
    @Benchmark
    @OperationsPerInvocation(ROUND_TRIPS)
    public int roundTrip() {
        for (int v = 1; v <= ROUND_TRIPS; v++) {
            ping.setInt(v);
            int seen;
            while ((seen = pong.getInt()) != v) {
                if (seen == TwinWorkload.GAVE_UP) {
                    throw new IllegalStateException("the ping-pong kernel gave up waiting for ping " + v);
                }
                Thread.onSpinWait();
            }
        }
        return ROUND_TRIPS;
    }
}
