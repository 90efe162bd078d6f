package dev.gatun.cuda.examples;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.graph.GraphSlot;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A miniature inference engine: the GPU host code whose scheduling, graph-slot logic and error
 * handling an engine author unit-tests with gatun-testkit ({@code MiniEngineTest} runs it on the
 * simulated driver in CI, and on a GPU where there is one).
 *
 * <p>It answers y = a * x + x for requests x of any length, in chunks of its workspace's
 * {@linkplain #chunkElements() size}, in two stages: {@code scale} (mid = a * x) on a prep stream,
 * then, once an event says the prep stream got there, {@code add} (y = mid + x) on a compute
 * stream. {@link #serve} launches both stages for every chunk; {@link #serveReplayed} captures them
 * once into a graph slot and replays it per chunk. Its workspace is allocated on first use; when
 * the device runs out of memory, it halves its chunk and tries again, down to
 * {@link #MIN_CHUNK_ELEMENTS}.
 */
public final class MiniEngine implements AutoCloseable {

    /** mid = a * x over n floats. */
    public static final String SCALE_SOURCE = """
            extern "C" __global__ void scale(float* mid, const float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) mid[i] = a * x[i];
            }
            """;

    /** y = mid + x over n floats. */
    public static final String ADD_SOURCE = """
            extern "C" __global__ void add(float* y, const float* mid, const float* x, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = mid[i] + x[i];
            }
            """;

    /** The smallest chunk the engine shrinks to before it gives up on a device out of memory. */
    public static final int MIN_CHUNK_ELEMENTS = 1024;

    private static final int BLOCK = 256;

    private final CudaContext ctx;
    private final Kernel scale;
    private final Kernel add;
    private final float a;
    private final Stream prep;
    private final Stream compute;
    private final Event prepared;
    private final CudaGraphs graphs;
    private final GraphSlot step;
    private int chunk;
    /** x, mid and y, each {@link #chunk} floats; empty until the first request. */
    private final List<DeviceBuffer> workspace = new ArrayList<>();
    private KernelLaunch scaleLaunch;
    private KernelLaunch addLaunch;

    /**
     * An engine over kernels already loaded (each compiled from {@link #SCALE_SOURCE} and
     * {@link #ADD_SOURCE}), working on two streams the caller owns.
     *
     * @param ctx the context
     * @param scale the {@code scale} kernel
     * @param add the {@code add} kernel
     * @param a the factor
     * @param prep the stream of the first stage
     * @param compute the stream of the second stage, and of the captured graph's replays
     * @param chunkElements the workspace's size, in floats, before any shrinking
     */
    public MiniEngine(CudaContext ctx, Kernel scale, Kernel add, float a, Stream prep, Stream compute, int chunkElements) {
        if (chunkElements < MIN_CHUNK_ELEMENTS) {
            throw new IllegalArgumentException("chunkElements is " + chunkElements + "; at least " + MIN_CHUNK_ELEMENTS);
        }
        this.ctx = ctx;
        this.scale = scale;
        this.add = add;
        this.a = a;
        this.prep = prep;
        this.compute = compute;
        this.chunk = chunkElements;
        this.graphs = CudaGraphs.create(ctx); // allocates the latch word: may run out of memory
        try {
            this.prepared = ctx.createEvent();
        } catch (RuntimeException e) {
            graphs.close();
            throw e;
        }
        this.step = graphs.registerGroup("engine").slot("step");
    }

    /** {@return the workspace's size in floats: the chunk a request is served in} */
    public int chunkElements() {
        return chunk;
    }

    /** {@return how many times the step has been captured into its graph slot} */
    public long captures() {
        return step.counters().captures();
    }

    /** {@return how many times the captured step has been replayed} */
    public long replays() {
        return step.counters().replays();
    }

    /**
     * Serves one request eagerly: per chunk, the two stages on their two streams.
     *
     * @param x the request
     * @param y where the answer goes, as long as {@code x}
     */
    public void serve(float[] x, float[] y) {
        serve(x, y, false);
    }

    /**
     * Serves one request by replaying the step captured in its graph slot (captured on the first
     * such request): per chunk, one replay on the compute stream.
     *
     * @param x the request
     * @param y where the answer goes, as long as {@code x}
     */
    public void serveReplayed(float[] x, float[] y) {
        serve(x, y, true);
    }

    private void serve(float[] x, float[] y, boolean replayed) {
        if (x.length != y.length) {
            throw new IllegalArgumentException("x has " + x.length + " elements, y " + y.length);
        }
        ensureWorkspace();
        if (replayed && !step.hasExecutable()) {
            step.beginCapture(compute, CaptureMode.THREAD_LOCAL);
            scaleLaunch.launch(compute);           // in the graph the stages are ordered by the stream
            addLaunch.launch(compute);
            step.endCapture();
        }
        float[] in = new float[chunk];
        float[] out = new float[chunk];
        for (int from = 0; from < x.length; from += chunk) {
            int n = Math.min(chunk, x.length - from);
            // A short last chunk is padded: the captured graph always covers the whole workspace.
            Arrays.fill(in, 0f);
            System.arraycopy(x, from, in, 0, n);
            workspace.get(0).asFloats().copyFrom(in);
            if (replayed) {
                step.replay(compute);
            } else {
                scaleLaunch.launch(prep);
                prepared.record(prep);
                compute.waitFor(prepared);             // add reads what scale wrote on the other stream
                addLaunch.launch(compute);
            }
            workspace.get(2).asFloats().copyTo(out);   // ordered after the launches that wrote it
            System.arraycopy(out, 0, y, from, n);
        }
    }

    /** Allocates x, mid and y on first use, halving the chunk while the device is out of memory. */
    private void ensureWorkspace() {
        if (!workspace.isEmpty()) {
            return;
        }
        while (workspace.isEmpty()) {
            try {
                for (int i = 0; i < 3; i++) {
                    workspace.add(ctx.allocate(4L * chunk));
                }
            } catch (OutOfDeviceMemoryException e) {
                releaseWorkspace();
                if (chunk / 2 < MIN_CHUNK_ELEMENTS) {
                    throw e;
                }
                chunk /= 2;
            }
        }
        LaunchConfig config = LaunchConfig.covering(chunk, BLOCK);
        DeviceBuffer in = workspace.get(0);
        DeviceBuffer mid = workspace.get(1);
        DeviceBuffer out = workspace.get(2);
        scaleLaunch = scale.prepare(config, KernelArg.pointer(mid), KernelArg.pointer(in), KernelArg.f32(a),
                KernelArg.i32(chunk));
        addLaunch = add.prepare(config, KernelArg.pointer(out), KernelArg.pointer(mid), KernelArg.pointer(in),
                KernelArg.i32(chunk));
    }

    private void releaseWorkspace() {
        workspace.forEach(DeviceBuffer::close);
        workspace.clear();
    }

    /** Closes the graphs, the event and the workspace; the kernels and streams are the caller's. */
    @Override
    public void close() {
        graphs.close();
        prepared.close();
        releaseWorkspace();
    }
}
