package dev.gatun.cuda.blas;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.List;

/** A simulated GPU, one context, and the simulated libraries over it: one per test. */
final class BlasWorld {
    final Interposer interposer = Interposer.over(new FakeDriverApi());
    final Simulated sim = new Simulated(interposer);
    final CudaContext ctx = sim.context();
    final FakeBlasApi fake = new FakeBlasApi(interposer.api());
    final BlasRuntime runtime = new BlasRuntime(fake);
    private final List<DeviceBuffer> buffers = new ArrayList<>();

    Blas blas() {
        return runtime.of(ctx);
    }

    /** A buffer of {@code elements} elements of {@code type}, as a view of that type. */
    DeviceView matrix(BlasType type, long elements) {
        DeviceBuffer b = ctx.allocate(elements * type.bytes());
        buffers.add(b);
        return b.as(type.elementType());
    }

    /** Closes the buffers {@link #matrix} made (those still open), then the context. */
    void close() {
        buffers.forEach(DeviceBuffer::close);
        ctx.close();
    }
}
