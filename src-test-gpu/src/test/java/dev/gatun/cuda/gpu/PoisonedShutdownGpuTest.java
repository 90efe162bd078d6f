package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Shutdown after a real illegal-address fault, in a child JVM: a sticky error poisons the
 * primary context for the rest of the process, so it cannot run beside the other GPU tests.
 * Tagged "faults": compute-sanitizer would (rightly) report the deliberate fault.
 */
@RequiresGpu
@Tag(GpuTags.FAULTS)
class PoisonedShutdownGpuTest {

    private static final String POKE = """
            extern "C" __global__ void poke(int* p, int v) { *p = v; }
            """;

    /** Runs in the child JVM; prints one line per finding. */
    public static void main(String[] args) {
        Device device = Cuda.system().device(0);
        CudaContext ctx = device.context();
        CompileOptions options = CompileOptions.of(CompileTarget.ptx(device.capabilities()));
        NvrtcLibrary.system().compiler().load(ctx.modules(), "poke", POKE, options, "poke");
        ctx.close(); // only the registry's module is left: the close retires it itself
        System.out.println("registryOnlyClose=" + ctx.isClosed() + " modules=" + ctx.diagnostics().liveOwners(OwnerKind.MODULE));

        ctx = device.context();
        NvrtcLibrary.system().compiler().load(ctx.modules(), "poke", POKE, options, "poke");
        Stream s = ctx.createStream();
        Kernel poke = ctx.modules().kernel("poke", "poke");
        DeviceBuffer b = ctx.allocate(1 << 20);
        poke.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(b), KernelArg.i32(1));
        s.synchronize();
        poke.launch(s, LaunchConfig.of(1, 1), KernelArg.address(0x100), KernelArg.i32(1)); // unmapped: a sticky fault
        try {
            s.synchronize();
            System.out.println("fault=none");
        } catch (CudaException e) {
            System.out.println("fault=" + e.resultName() + " poisoned=" + ctx.diagnostics().poisonedBy().isPresent());
        }
        s.close();
        poke.close();
        b.close();
        ctx.close();
        long live = 0;
        for (OwnerKind kind : OwnerKind.values()) {
            live += ctx.diagnostics().liveOwners(kind);
        }
        System.out.println("closed=" + ctx.isClosed() + " live=" + live + " pending=" + ctx.diagnostics().counters().pendingRetirements()
                + " abandoned=" + ctx.diagnostics().counters().abandonedRetirements());
    }

    @Test
    void afterAnIllegalAddressEveryCloseSucceedsAndTheContextCloses() throws IOException, InterruptedException {
        GpuChildJvm.Result r = GpuChildJvm.run(PoisonedShutdownGpuTest.class, Path.of("").toAbsolutePath(), env -> {
        }, List.of(), Duration.ofSeconds(120));
        String output = r.output();
        List<String> lines = r.lines();
        assertEquals(0, r.exitValue(), "the child JVM finished (-1: it did not within 120 s):\n" + output);
        assertTrue(lines.contains("registryOnlyClose=true modules=0"), output);
        assertTrue(lines.contains("fault=CUDA_ERROR_ILLEGAL_ADDRESS poisoned=true"), output);
        String closed = lines.stream().filter(l -> l.startsWith("closed=")).findFirst().orElse("");
        assertTrue(closed.startsWith("closed=true live=0 pending=0 abandoned="), output);
        assertTrue(Integer.parseInt(closed.substring(closed.indexOf("abandoned=") + 10)) >= 4,
                "the stream, buffer, module and the context's own streams were abandoned: " + output);
    }
}
