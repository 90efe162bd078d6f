package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Event nodes of built graphs on the H200: a producer graph (kernel, then an event record node)
 * replayed on one stream and a consumer graph (an event wait node, then a kernel that reads the
 * producer's output) replayed on another, on random inputs with poisoned outputs, checked against
 * the CPU; the event is complete after the replays. The producer mixes each input for many
 * rounds, so a consumer that did not wait would read the poison. Then the executables' event
 * nodes are pointed at a second event and the pair is checked again.
 */
@RequiresGpu
class GraphEventNodesGpuTest {

    private static final String SOURCE = """
            extern "C" __global__ void produce(unsigned int* a, const unsigned int* x, int rounds, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    unsigned int v = x[i];
                    for (int k = 0; k < rounds; k++) v = v * 1664525u + 1013904223u;
                    a[i] = v;
                }
            }
            extern "C" __global__ void consume(unsigned int* b, const unsigned int* a, const unsigned int* y, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) b[i] = (a[i] ^ (y[i] * 5u + 3u)) + 1u;
            }
            """;
    private static final int POISON = 0xDEADBEEF;
    private static final int ROUNDS = 4096;

    private static int[] cpu(int[] x, int[] y) {
        int[] b = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            int v = x[i];
            for (int k = 0; k < ROUNDS; k++) {
                v = v * 1664525 + 1013904223;
            }
            b[i] = (v ^ (y[i] * 5 + 3)) + 1;
        }
        return b;
    }

    private static int[] random(Random r, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextInt();
        }
        return v;
    }

    @Test
    void aWaitNodeOrdersTheConsumerGraphAfterTheProducerGraphsRecordNode() {
        CudaContext ctx = Gpu.context();
        int n = (1 << 18) + 3;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        LaunchConfig grid = LaunchConfig.covering(n, 256);
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); Kernel consume = Gpu.kernel(SOURCE, "consume");
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n);
                DeviceBuffer a = ctx.allocate(4L * n); DeviceBuffer b = ctx.allocate(4L * n);
                Event handoff = ctx.createEvent(); Event other = ctx.createEvent();
                Stream first = ctx.createStream(); Stream second = ctx.createStream();
                Graph producer = ctx.createGraph(); Graph consumer = ctx.createGraph()) {
            GraphNode record = producer.addEventRecord(handoff, producer.addKernel(produce.prepare(grid,
                    KernelArg.pointer(a), KernelArg.pointer(x), KernelArg.i32(ROUNDS), KernelArg.i32(n))));
            GraphNode wait = consumer.addEventWait(handoff);
            consumer.addKernel(consume.prepare(grid, KernelArg.pointer(b), KernelArg.pointer(a), KernelArg.pointer(y),
                    KernelArg.i32(n)), wait);
            try (GraphExec p = producer.instantiate(); GraphExec c = consumer.instantiate()) {
                for (int round = 0; round < 10; round++) {
                    if (round == 5) { // the second half through the other event, set on the executables only
                        p.setEvent(record, other);
                        c.setEvent(wait, other);
                    }
                    Event used = round < 5 ? handoff : other;
                    int[] hostX = random(r, n);
                    int[] hostY = random(r, n);
                    x.asInts().copyFrom(hostX);
                    y.asInts().copyFrom(hostY);
                    first.fill(a.asInts(), POISON);
                    second.fill(b.asInts(), POISON);
                    p.launch(first);
                    c.launch(second);
                    int[] got = new int[n];
                    b.asInts().copyTo(got);
                    assertArrayEquals(cpu(hostX, hostY), got, "round " + round + ", seed=" + seed);
                    used.synchronize();
                    assertTrue(used.query(), "the record node recorded " + used + " in round " + round);
                }
            }
        }
    }
}
