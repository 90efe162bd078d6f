package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Handles made outside Gatun, with raw driver calls as another library would make them: Gatun
 * validates and borrows them, runs its own work on them with right results, and leaves them
 * alive and usable by their creator after its views are closed.
 */
@RequiresGpu
class ForeignHandlesGpuTest {

    private static final String SCALE = """
            extern "C" __global__ void scale(float* out, const float* in, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = a * in[i];
            }
            """;

    @Test
    void gatunWorkOnABorrowedStreamAndBorrowedMemoryIsRightAndLeavesThemToTheirCreator() throws Throwable {
        int n = (1 << 20) + 77;
        long bytes = 4L * n;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        float[] in = new float[n];
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            in[i] = r.nextFloat() * 2 - 1;
            expected[i] = 1.75f * in[i];
        }
        CudaContext ctx = Gpu.context();
        assertSame(ctx, Cuda.system().contextOf(ctx.handle()), "the primary context is Gatun's context");
        long streamsBefore = ctx.diagnostics().liveOwners(OwnerKind.STREAM);

        // The other library: a stream and two allocations in the primary context.
        RawDriver.setCurrentOrFail(ctx.handle());
        MemorySegment rawStream = RawDriver.createStreamOrFail();
        long rawIn = RawDriver.allocateOrFail(bytes + 256);
        long rawOut = RawDriver.allocateOrFail(bytes);

        try (Kernel own = Gpu.kernel(SCALE, "scale"); Kernel scale = Kernel.borrow(ctx, own.moduleHandle(), "scale");
                Arena arena = Arena.ofConfined()) {
            Stream s = Stream.borrow(ctx, rawStream);
            DeviceBuffer x = DeviceBuffer.borrow(ctx, rawIn + 256, bytes); // an offset inside the allocation
            DeviceBuffer y = DeviceBuffer.borrow(ctx, rawOut, bytes);
            assertTrue(s.isBorrowed() && x.isBorrowed() && y.isBorrowed() && scale.isBorrowed());

            // Refusals the real driver backs: a range past the allocation, host memory, a default stream.
            assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(ctx, rawOut + 4, bytes));
            try (PinnedBuffer host = ctx.allocatePinned(64)) {
                assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(ctx, host.segment().address(), 64));
            }
            assertThrows(IllegalArgumentException.class, () -> Stream.borrow(ctx, MemorySegment.NULL));

            MemorySegment upload = arena.allocate(bytes, 16);
            MemorySegment.copy(in, 0, upload, ValueLayout.JAVA_FLOAT, 0, n);
            s.upload(x.asFloats(), upload);
            s.fill(y.asFloats(), Float.floatToRawIntBits(Float.NaN)); // poison: unwritten elements read NaN
            scale.launch(s, LaunchConfig.covering(n, 256), KernelArg.pointer(y), KernelArg.pointer(x),
                    KernelArg.f32(1.75f), KernelArg.i32(n));
            float[] out = new float[n];
            y.asFloats().copyTo(out); // synchronous: ordered after the work on the borrowed stream
            assertArrayEquals(expected, out, "seed=" + seed);

            s.close();
            x.close();
            y.close();
        }
        ctx.synchronize();
        ctx.reap();
        assertEquals(streamsBefore, ctx.diagnostics().liveOwners(OwnerKind.STREAM));
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements(), () -> "retirements left: " + ctx.diagnostics().counters());

        // The creator's handles are still alive: the stream answers, the memory holds the result.
        RawDriver.setCurrentOrFail(ctx.handle());
        assertEquals(0, RawDriver.queryStream(rawStream), "cuStreamQuery on the stream after Gatun's view closed");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(bytes, 16);
            host.fill((byte) 0xFF); // poison
            assertEquals(0, RawDriver.copyToHost(host, rawOut), "cuMemcpyDtoH from the memory after Gatun's view closed");
            float[] out = new float[n];
            MemorySegment.copy(host, ValueLayout.JAVA_FLOAT, 0, out, 0, n);
            assertArrayEquals(expected, out, "seed=" + seed);
        }
        RawDriver.destroyStreamOrFail(rawStream);
        RawDriver.freeOrFail(rawIn);
        RawDriver.freeOrFail(rawOut);
    }

    @Test
    void aContextAnotherLibraryCreatedIsRefusedAndStaysCurrent() throws Throwable {
        CudaContext ctx = Gpu.context();
        MemorySegment other = RawDriver.createContextOrFail(); // current on this thread now
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Cuda.system().contextOf(other));
            assertTrue(e.getMessage().contains("primary context"), e.getMessage());
            MemorySegment stream = RawDriver.createStreamOrFail(); // in the other context: still current
            try {
                assertThrows(IllegalArgumentException.class, () -> Stream.borrow(ctx, stream));
            } finally {
                RawDriver.destroyStreamOrFail(stream);
            }
        } finally {
            RawDriver.destroyContextOrFail(other);
        }
        RawDriver.setCurrentOrFail(ctx.handle());
    }
}
