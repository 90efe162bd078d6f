package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.TransferState;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * NVIDIA's asyncAPI sample in Gatun (issue 36 §3): a pinned buffer of 16M ints is uploaded, a
 * kernel adds a value to every element, the result is downloaded back into the same buffer, with
 * timing events around the three, and the host counts how many times it asks whether the last
 * event is done while the GPU works. The download used to wait on the host for the upload (a new
 * transfer through a pinned buffer waited for the previous one), so the host ran only after the
 * upload; now it is ordered after the upload by the stream.
 *
 * <p>The C twin, {@code probes/async-api} in the bundle, runs the same rounds and prints the same
 * line with {@code c} for {@code gatun}: compare the iterations and the download's time.
 */
@RequiresGpu
class AsyncApiGpuTest {

    private static final int N = 16 << 20;
    private static final int BLOCK = 512;
    /** Rounds of the whole pipeline: the last is the one reported, the earlier ones warm the path (as the C twin does). */
    private static final int ROUNDS = 3;

    private static final String INCREMENT = """
            extern "C" __global__ void increment(int* data, int value) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                data[i] = data[i] + value;
            }
            """;

    /** What one round measured. */
    private record Round(long iterations, long downloadNanos, boolean uploadDoneWhenDownloadReturned, float gpuMillis) {
    }

    /** The pipeline's owners: the kernel, a stream, the pinned buffer and the device buffer, the events around the work. */
    private static final class Pipeline implements AutoCloseable {
        private final CudaContext ctx = Gpu.context();
        private final long seed = Gpu.seed();
        private final Random random = Gpu.random(seed);
        private final Kernel increment = Gpu.kernel(INCREMENT, "increment");
        private final Stream stream = ctx.createStream();
        private final PinnedBuffer a = ctx.allocatePinned(4L * N);
        private final DeviceBuffer d = ctx.allocate(4L * N);
        private final Event start = ctx.createTimingEvent();
        private final Event uploaded = ctx.createEvent();
        private final Event stop = ctx.createTimingEvent();

        /** {@code rounds} rounds; what the last one measured. */
        Round run(int rounds) {
            Round last = null;
            for (int r = 0; r < rounds; r++) {
                last = round();
            }
            return last;
        }

        /** One round: fills the buffer, queues the pipeline, counts until it is done, checks the result against the CPU. */
        private Round round() {
            int[] input = new int[N];
            for (int i = 0; i < N; i++) {
                input[i] = random.nextInt(1 << 24);
            }
            int value = 1 + random.nextInt(1000);
            a.segment().copyFrom(MemorySegment.ofArray(input));
            start.record(stream);
            stream.upload(d.bytes(), a, 0);
            uploaded.record(stream);
            increment.launch(stream, LaunchConfig.of(N / BLOCK, BLOCK), KernelArg.pointer(d), KernelArg.i32(value));
            long before = System.nanoTime();
            stream.download(a, 0, d.bytes());
            long downloadNanos = System.nanoTime() - before;
            boolean uploadDone = uploaded.query();
            stop.record(stream);
            long iterations = 0;
            while (!stop.query()) {
                iterations++;
            }
            int[] out = a.segment().toArray(ValueLayout.JAVA_INT);
            int[] expected = new int[N];
            for (int i = 0; i < N; i++) {
                expected[i] = input[i] + value;
            }
            assertArrayEquals(expected, out, () -> "seed " + seed + ", value " + value);
            return new Round(iterations, downloadNanos, uploadDone, stop.elapsedMillis(start));
        }

        @Override
        public void close() {
            stop.close();
            uploaded.close();
            start.close();
            d.close();
            a.close();
            stream.close();
            increment.close();
        }
    }

    /** The pipeline's result: every element is its input plus the value, in every round (the sanitizers run this one). */
    @Test
    void anUploadKernelDownloadPipelineThroughOnePinnedBufferMatchesTheCpu() {
        try (Pipeline pipeline = new Pipeline()) {
            pipeline.run(2);
            assertEquals(TransferState.COMPLETE, pipeline.a.transferState());
        }
    }

    /**
     * The host is free while the GPU works: the download returns before the upload it follows has
     * finished, and the host counts while the events say the GPU is busy. Prints the ASYNC-API line.
     */
    @Test
    @Tag(GpuTags.TIMING)
    void theHostRunsWhileThePipelineWorks() {
        Round last;
        try (Pipeline pipeline = new Pipeline()) {
            last = pipeline.run(ROUNDS);
        }
        System.out.printf("ASYNC-API gatun: %d host iterations while the GPU worked; download returned after %.1f us "
                + "(GPU time %.3f ms, round %d of %d)%n", last.iterations(), last.downloadNanos() / 1e3, last.gpuMillis(),
                ROUNDS, ROUNDS);
        assertFalse(last.uploadDoneWhenDownloadReturned(), "the download returned only after the 64 MiB upload before "
                + "it had finished: it waited for it on the host (" + last.downloadNanos() / 1e3 + " us)");
        assertFalse(last.iterations() == 0, "the host never found the GPU busy");
    }
}
