package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.IpcEventHandle;
import dev.gatun.cuda.IpcBufferExport;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MemoryAccess;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PoolExportHandle;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * IPC between two JVMs on one GPU, as an engine's scheduler shares a KV cache with a worker:
 * this JVM uploads random ints to a buffer, launches a kernel that waits about five seconds and
 * then rewrites them, and records an interprocess event after it; a child JVM gets the buffer's
 * and the event's handles as hex arguments, imports both, waits on the event (not on the host),
 * computes into its own poisoned buffer with a kernel, copies the result back into the imported
 * buffer and prints its checksum. This JVM compares the buffer and the checksum with the CPU's.
 * Had the child not waited for the event, it would have read the original ints. Two paths:
 * legacy IPC of a {@code ctx.allocate} buffer, and an allocation from an exported memory pool,
 * whose file descriptor the child copies with {@code pidfd_getfd} ({@link PidFd}); the pool path
 * also once without the event, the exporter synchronizing before it starts the child.
 *
 * <p>Tagged {@value GpuTags#WRITTEN_BY_ANOTHER_PROCESS}: the child's kernel reads memory that this JVM
 * wrote, and compute-sanitizer's initcheck tracks initialization per process, so under
 * {@code ./sanitize initcheck} (which follows child processes) every such read is reported as
 * uninitialized: one report per element of the shared buffer, in the child's kernel (named
 * {@code importerMix}; it was {@code mix} until 2026-12-03, the name of a kernel of
 * {@link GraphMemoryGpuTest} too, which those reports were first blamed on). The other three
 * tools run these tests.
 */
@RequiresGpu
@Tag(GpuTags.WRITTEN_BY_ANOTHER_PROCESS)
class IpcGpuTest {

    private static final int POISON = 0x5A5A5A5A;
    private static final int BLOCKS = 528;
    private static final int THREADS = 256;
    /** Longer than a child JVM takes to start and import, so that its wait on the event is what orders its reads. */
    private static final int SLEEP_MS = 5000;

    /** The exporter's kernel: each block's first thread sleeps about {@code millis} ms, then the block rewrites its share. */
    private static final String SLOW_AFFINE = """
            extern "C" __global__ void slow_affine(unsigned int* a, int n, int millis) {
                if (threadIdx.x == 0) {
                    for (int ms = 0; ms < millis; ms++) {
                        __nanosleep(1000000);
                    }
                }
                __syncthreads();
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                    a[i] = a[i] * 3u + 1u; // wraps as Java's int arithmetic does
                }
            }
            """;

    /** The importer's kernel: a mix of the shared ints into its own buffer. */
    private static final String MIX = """
            extern "C" __global__ void importerMix(const unsigned int* a, unsigned int* b, int n) {
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                    unsigned int v = a[i];
                    b[i] = (v ^ (v >> 7)) * 0x9E3779B1u + (unsigned int) i;
                }
            }
            """;

    private static int affine(int v) {
        return v * 3 + 1;
    }

    private static int mix(int v, int i) {
        return (v ^ (v >>> 7)) * 0x9E3779B1 + i;
    }

    /**
     * The importing child. {@code legacy <memory handle> <event handle> <n>}, or
     * {@code pool <parent pid> <pool fd in the parent> <allocation export> <event handle> <n>};
     * handles in hex.
     */
    public static void main(String[] args) throws Throwable {
        HexFormat hex = HexFormat.of();
        CudaContext ctx = Gpu.context();
        boolean pool = args[0].equals("pool");
        MemoryPool imported = null;
        DeviceBuffer shared;
        if (pool) {
            int fd = PidFd.copyOf(Long.parseLong(args[1]), Integer.parseInt(args[2]));
            imported = MemoryPool.importFrom(ctx, fd);
            PidFd.close(fd); // the driver does not keep the descriptor
            System.out.println("accessBefore=" + imported.access(ctx));
            if (imported.access(ctx) != MemoryAccess.READ_WRITE) {
                imported.setAccess(ctx, MemoryAccess.READ_WRITE);
            }
            shared = imported.importAllocation(IpcBufferExport.fromBytes(hex.parseHex(args[3])));
        } else {
            shared = DeviceBuffer.importFrom(ctx, IpcBufferExport.fromBytes(hex.parseHex(args[1])));
        }
        String eventHex = args[pool ? 4 : 2];
        // "-": the exporter synchronized before starting this JVM, so there is nothing to wait for.
        Event event = eventHex.equals("-") ? null : Event.importFrom(ctx, IpcEventHandle.fromBytes(hex.parseHex(eventHex)));
        int n = Integer.parseInt(args[pool ? 5 : 3]);
        Kernel mix = Gpu.kernel(MIX, "importerMix");
        Stream s = ctx.createStream();
        DeviceBuffer own = ctx.allocate(4L * n);
        System.out.println("imported=" + shared.isImported() + " bytes=" + shared.byteSize() + " eventImported="
                + (event != null && event.isImported()));
        s.fill(own.asInts(), POISON);
        if (event != null) {
            s.waitFor(event); // the exporter's kernel rewrote the ints before the event's record
        }
        mix.launch(s, LaunchConfig.of(BLOCKS, THREADS), KernelArg.pointer(shared), KernelArg.pointer(own), KernelArg.i32(n));
        s.copy(shared.asInts().slice(0, n), own.asInts()); // the result back into the exporter's memory
        s.synchronize();
        int[] result = new int[n];
        own.asInts().copyTo(result);
        System.out.println("checksum=" + Arrays.hashCode(result));
        shared.close(); // a pool import is freed here (cuMemFree) before the exporter frees its buffer
        if (event != null) {
            event.close();
        }
        own.close();
        mix.close();
        s.close();
        if (imported != null) {
            imported.close();
        }
        ctx.synchronize(); // every fence the closes recorded completes, and the reap that follows retires them all
        System.out.println("liveBuffers=" + ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER) + " liveEvents="
                + ctx.diagnostics().liveOwners(OwnerKind.EVENT) + " livePools=" + ctx.diagnostics().liveOwners(OwnerKind.MEMORY_POOL)
                + " retirementsFailed=" + ctx.diagnostics().counters().failedRetirements());
    }

    @Test
    void aChildJvmWaitsOnTheExportedEventAndWritesItsResultIntoTheExportedBuffer() throws Throwable {
        CudaContext ctx = Gpu.context();
        Stream s = ctx.createStream();
        try {
            roundTrip(ctx, s, ctx.allocate(4L * ((1 << 20) + 1000)), true, (shared, event, n) -> List.of("legacy",
                    HexFormat.of().formatHex(exportOf(shared, IpcBufferExport.Kind.MEMORY_HANDLE).toBytes()), event,
                    Integer.toString(n)));
        } finally {
            s.close();
        }
    }

    @Test
    void aChildJvmImportsTheExportedPoolByFileDescriptorAndWritesItsResultIntoThePoolAllocation() throws Throwable {
        poolRoundTrip(true);
    }

    @Test
    void aChildJvmImportsThePoolAndItsAllocationAfterTheExporterSynchronized() throws Throwable {
        poolRoundTrip(false);
    }

    /** {@code shared}'s export, checked to be of {@code kind} (how the buffer was allocated says which). */
    private static IpcBufferExport exportOf(DeviceBuffer shared, IpcBufferExport.Kind kind) {
        IpcBufferExport export = shared.exportForIpc();
        assertEquals(kind, export.kind(), () -> "the export of " + shared);
        return export;
    }

    /** The pool path; with {@code withEvent} the child waits on an interprocess event, else the exporter synchronizes first. */
    private static void poolRoundTrip(boolean withEvent) throws Throwable {
        CudaContext ctx = Gpu.context();
        Stream s = ctx.createStream();
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR));
        int fd = pool.exportFileDescriptor();
        try {
            roundTrip(ctx, s, pool.allocate(s, 4L * ((1 << 20) + 1000)), withEvent, (shared, event, n) -> List.of("pool",
                    Long.toString(ProcessHandle.current().pid()), Integer.toString(fd),
                    HexFormat.of().formatHex(exportOf(shared, IpcBufferExport.Kind.POOL_ALLOCATION).toBytes()), event,
                    Integer.toString(n)));
        } finally {
            PidFd.close(fd); // the exported descriptor is the caller's
            pool.close();
            s.close();
        }
    }

    /** The child's arguments, given the exported buffer, the event handle in hex and the int count. */
    private interface ChildArguments {
        List<String> of(DeviceBuffer shared, String eventHex, int n);
    }

    /**
     * Runs the exchange on {@code shared} (room for 2^20 + 1000 ints, of which the child uses the
     * first n), then closes it: after the child exited, so after every import of it was freed.
     */
    private static void roundTrip(CudaContext ctx, Stream s, DeviceBuffer shared, boolean withEvent,
            ChildArguments arguments) throws IOException, InterruptedException {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = (1 << 20) + random.nextInt(1000);
        int[] data = random.ints(n).toArray();
        String why = "n=" + n + " seed=" + seed;
        int[] expected = new int[n];
        for (int i = 0; i < n; i++) {
            expected[i] = mix(affine(data[i]), i);
        }
        Kernel slow = Gpu.kernel(SLOW_AFFINE, "slow_affine");
        Event written = ctx.createInterprocessEvent();
        Path log = Files.createTempFile("gatun-ipc-child", ".log");
        try {
            shared.asInts().slice(0, n).copyFrom(data);
            slow.launch(s, LaunchConfig.of(BLOCKS, THREADS), KernelArg.pointer(shared), KernelArg.i32(n), KernelArg.i32(SLEEP_MS));
            String eventHex;
            if (withEvent) {
                written.record(s);
                eventHex = HexFormat.of().formatHex(written.exportForIpc().toBytes());
            } else {
                s.synchronize(); // the child starts after the kernel rewrote the ints
                eventHex = "-";
            }
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                    IpcGpuTest.class.getName()));
            command.addAll(arguments.of(shared, eventHex, n));
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            boolean finished = p.waitFor(180, TimeUnit.SECONDS);
            if (!finished) {
                p.destroyForcibly().waitFor();
            }
            String output = Files.readString(log, StandardCharsets.UTF_8);
            assertTrue(finished, "child JVM finished within 180 s: " + output);
            assertEquals(0, p.exitValue(), output);
            List<String> lines = output.lines().toList();
            assertTrue(lines.contains("imported=true bytes=" + shared.byteSize() + " eventImported=" + withEvent), output);
            assertTrue(lines.contains("checksum=" + Arrays.hashCode(expected)), "the child's result " + why + ": " + output);
            assertTrue(lines.contains("liveBuffers=0 liveEvents=0 livePools=1 retirementsFailed=0"),
                    "the child closed everything (its default pool's view stays): " + output);

            int[] back = new int[n];
            Arrays.fill(back, POISON);
            shared.asInts().slice(0, n).copyTo(back);
            assertArrayEquals(expected, back, "the child's result in the exported buffer " + why);
        } finally {
            Files.deleteIfExists(log);
            written.close();
            shared.close();
            slow.close();
        }
    }
}
