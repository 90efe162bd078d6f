package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.GpuCoredumps;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU coredumps on a real fault, in a child JVM (a sticky error poisons the primary context for
 * the rest of its process): with {@code -Dgatun.coredump=true} a kernel that writes to an
 * unmapped address leaves a lightweight dump, an ELF file naming the kernel, the JVM survives
 * (Gatun sets CU_COREDUMP_SKIP_ABORT; without it the driver aborts the process), and the
 * {@link ContextPoisonedException} names the file; with dumps off no file is written. The child
 * runs in the test's temporary directory, where the driver's default dump file would go too.
 * Tagged "faults": compute-sanitizer would (rightly) report the deliberate fault.
 */
@RequiresGpu
@Tag(GpuTags.FAULTS)
class GpuCoredumpGpuTest {

    /** The faulting kernel's name, which the dump must hold (extern "C": not mangled). */
    static final String KERNEL = "gatun_coredump_probe";
    private static final String SOURCE = "extern \"C\" __global__ void " + KERNEL + "(int* p, int v) { *p = v; }\n";
    private static final String MESSAGE = "FAILURE-MESSAGE coredump: ";
    private static final String FILE = "coredumpFile=";
    private static final String FAULT = "fault=";
    /** The driver's own switches, which would take precedence over Gatun's: the child runs without them. */
    private static final List<String> DRIVER_ENVIRONMENT = List.of("CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
            "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "CUDA_ENABLE_LIGHTWEIGHT_COREDUMP", "CUDA_COREDUMP_FILE",
            "CUDA_COREDUMP_GENERATION_FLAGS", "CUDA_ENABLE_USER_TRIGGERED_COREDUMP");

    /** Runs in the child JVM: faults the kernel, then prints what the poisoned context's exception says. */
    public static void main(String[] args) {
        Device device = Cuda.system().device(0);
        CudaContext ctx = device.context(); // ContextOptions.defaults(): the gatun.coredump properties
        NvrtcLibrary.system().compiler().load(ctx.modules(), "probe", SOURCE,
                CompileOptions.of(CompileTarget.ptx(device.capabilities())), KERNEL);
        Kernel probe = ctx.modules().kernel("probe", KERNEL);
        Stream s = ctx.createStream();
        probe.launch(s, LaunchConfig.of(1, 1), KernelArg.address(0x100), KernelArg.i32(1)); // unmapped: a sticky fault
        try {
            s.synchronize();
            System.out.println(FAULT + "none");
        } catch (CudaException e) {
            System.out.println(FAULT + e.resultName());
        }
        try {
            ctx.synchronize();
            System.out.println(MESSAGE + "none: the context was not poisoned");
        } catch (ContextPoisonedException e) {
            System.out.println(MESSAGE + e.getMessage().replace('\n', ' '));
            System.out.println(FILE + e.coredumpFile().map(Path::toString).orElse("none"));
        }
        s.close();
        probe.close();
        ctx.close();
    }

    private static GpuChildJvm.Result child(Path dir, List<String> jvmOptions) throws IOException, InterruptedException {
        GpuChildJvm.Result r = GpuChildJvm.run(GpuCoredumpGpuTest.class, dir, env -> DRIVER_ENVIRONMENT.forEach(env::remove),
                jvmOptions, Duration.ofSeconds(240));
        assertEquals(0, r.exitValue(), "the child JVM survived the fault and exited normally (-1: it hung):\n" + r.output());
        assertEquals(FAULT + "CUDA_ERROR_ILLEGAL_ADDRESS", r.line(FAULT), r.output());
        return r;
    }

    /**
     * Needs a machine whose driver writes GPU coredumps: the bundle's {@code run} leaves it out
     * unless {@code GATUN_COREDUMP_TESTS} is set, since the H200 machines lent to this project
     * write none by any of the driver's ways ({@code probes/gpu-coredump}).
     */
    @Test
    @Tag(GpuTags.WRITES_GPU_COREDUMP)
    void withDumpsOnTheFaultWritesALightweightDumpNamingTheKernelAndTheExceptionNamesIt(@TempDir Path dir)
            throws IOException, InterruptedException {
        GpuChildJvm.Result r = child(dir, List.of("-D" + GpuCoredumps.PROPERTY + "=true",
                "-D" + GpuCoredumps.FILE_PROPERTY + "=" + dir.resolve("core_%h_%p.nvcudmp"),
                "-D" + GpuCoredumps.LIGHTWEIGHT_PROPERTY + "=true"));
        String message = r.line(MESSAGE);
        System.out.println(message); // for the README's "When something fails": a real message
        Path dump = Path.of(r.line(FILE).substring(FILE.length()));
        List<Path> written;
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            written = files.toList();
        }
        assertTrue(written.contains(dump), "the exception names a file the driver wrote in " + dir + " (there: "
                + written + "):\n" + r.output());
        assertTrue(message.contains("the driver wrote a GPU coredump to " + dump + "; open it with: cuda-gdb -ex "
                + "\"target cudacore " + dump + "\""), message);
        byte[] bytes = Files.readAllBytes(dump);
        assertTrue(bytes.length > 0, "the dump is not empty");
        assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, Arrays.copyOf(bytes, 4), "a GPU coredump is an ELF file");
        assertTrue(indexOf(bytes, KERNEL.getBytes(StandardCharsets.US_ASCII)) >= 0,
                "the dump (" + bytes.length + " bytes) names the faulting kernel " + KERNEL);
    }

    @Test
    void withDumpsOffNoFileIsWrittenAndTheExceptionNamesNone(@TempDir Path dir) throws IOException, InterruptedException {
        GpuChildJvm.Result r = child(dir, List.of());
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(), files.toList(), "no dump, not even the driver's default in the working directory");
        }
        assertEquals(FILE + "none", r.line(FILE), r.output());
        String message = r.line(MESSAGE);
        assertTrue(message.contains("CUDA_ERROR_ILLEGAL_ADDRESS") && message.contains("poisoned earlier"), message);
        assertFalse(message.substring(MESSAGE.length()).contains("coredump"), message); // past the line's own label
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
