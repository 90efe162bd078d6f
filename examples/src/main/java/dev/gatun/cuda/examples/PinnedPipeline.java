package dev.gatun.cuda.examples;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/**
 * An upload / compute / download pipeline over two streams: the data goes up in chunks through
 * pinned (page-locked) host buffers on one stream while a kernel processes the chunks already
 * there on another; a fence per chunk orders each kernel after its own upload only, and one
 * event tells the host when the whole pipeline is done.
 */
public final class PinnedPipeline {

    /** y = x * 0x9E3779B1 + 12345 in wrapping 32-bit arithmetic: every input bit moves the output. */
    static final String HASH_SOURCE = """
            extern "C" __global__ void hash(unsigned int* y, const unsigned int* x, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = x[i] * 0x9E3779B1u + 12345u;
            }
            """;

    static final int CHUNKS = 4;
    static final int CHUNK_ELEMENTS = 1 << 20;

    private PinnedPipeline() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("PinnedPipeline", cuda -> {
            CudaContext ctx = cuda.device(0).context();
            try {
                NvrtcLibrary.system().compiler().load(ctx.modules(), "pipeline", HASH_SOURCE,
                        CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), "hash");
                return run(ctx, CHUNK_ELEMENTS, System.nanoTime());
            } finally {
                ctx.close(); // unloads the modules its registry holds
            }
        });
    }

    /** The CPU's answer for one element, as {@link #HASH_SOURCE} computes it. */
    static int hash(int x) {
        return x * 0x9E3779B1 + 12345;
    }

    /**
     * Pushes {@link #CHUNKS} chunks of {@code chunk} random ints through module "pipeline"'s
     * hash kernel and reports whether every element came back as the CPU computes it.
     */
    static boolean run(CudaContext ctx, int chunk, long seed) {
        Random random = new Random(seed);
        int n = CHUNKS * chunk;
        long chunkBytes = 4L * chunk;
        PinnedBuffer[] in = new PinnedBuffer[CHUNKS];
        PinnedBuffer[] out = new PinnedBuffer[CHUNKS];
        int[] input = random.ints(n).toArray();
        int[] output = new int[n];
        Stream copies = ctx.createStream();  // the uploads
        Stream compute = ctx.createStream(); // the kernels and the downloads
        try (Kernel hash = ctx.modules().kernel("pipeline", "hash");
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n);
                Event done = ctx.createEvent()) {
            for (int c = 0; c < CHUNKS; c++) {
                in[c] = ctx.allocatePinned(chunkBytes);
                MemorySegment.copy(input, c * chunk, in[c].segment(), ValueLayout.JAVA_INT, 0, chunk);
                out[c] = ctx.allocatePinned(chunkBytes);
                out[c].segment().fill((byte) 0x5A); // poison: a chunk never downloaded shows
            }
            // Prepared once; each chunk points it at its own slices, in place.
            KernelLaunch launch = hash.prepare(LaunchConfig.covering(chunk, 256),
                    KernelArg.pointer(y), KernelArg.pointer(x), KernelArg.i32(chunk));
            // snippet:pinned-pipeline
            for (int c = 0; c < CHUNKS; c++) {
                DeviceView xc = x.asInts().slice((long) c * chunk, chunk);
                DeviceView yc = y.asInts().slice((long) c * chunk, chunk);
                copies.upload(xc, in[c], 0);               // asynchronous: chunk c+1 goes up while c computes
                compute.waitFor(copies.recordFence());     // the kernel waits for its own chunk's upload only
                launch.setPointer(0, yc).setPointer(1, xc).launch(compute);
                compute.download(out[c], 0, yc);           // after the kernel, on the same stream
            }
            done.record(compute);
            done.synchronize();                            // the host waits once, for the whole pipeline
            // end-snippet
            for (int c = 0; c < CHUNKS; c++) {
                // segment() would wait for the chunk's download; the event has already seen it done.
                MemorySegment.copy(out[c].segment(), ValueLayout.JAVA_INT, 0, output, c * chunk, chunk);
            }
        } finally {
            for (int c = 0; c < CHUNKS; c++) {
                closeIfMade(in[c]);
                closeIfMade(out[c]);
            }
            copies.close();
            compute.close();
        }
        for (int i = 0; i < n; i++) {
            if (output[i] != hash(input[i])) {
                return false;
            }
        }
        return true;
    }

    private static void closeIfMade(PinnedBuffer buffer) {
        if (buffer != null) {
            buffer.close();
        }
    }
}
