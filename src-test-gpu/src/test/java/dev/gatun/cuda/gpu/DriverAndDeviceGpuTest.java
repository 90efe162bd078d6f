package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.DeviceAttribute;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.junit.RequiresGpu;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The driver Gatun loaded, and the devices it reports, checked against nvidia-smi. */
@RequiresGpu
class DriverAndDeviceGpuTest {

    private static final long MIB = 1024 * 1024;
    /** Rounding slack between the driver's byte count and nvidia-smi's whole MiB. */
    private static final long MEMORY_TOLERANCE_MIB = 4;

    static IntStream deviceOrdinals() {
        return IntStream.range(0, Cuda.system().deviceCount());
    }

    @Test
    void driverIsInitializedAndSupportsCuda13(TestReporter reporter) {
        Cuda cuda = Cuda.system();
        reporter.publishEntry("driver", "CUDA " + cuda.driverVersion() + " from " + cuda.driverLibrary());
        assertTrue(cuda.driverVersion().encoded() >= 13000,
                () -> "driver supports CUDA " + cuda.driverVersion() + "; the GPU host must have a CUDA 13 driver");
    }

    @Test
    void driverWasLoadedFromLibcuda() {
        String described = Cuda.system().driverLibrary();
        Path library = LoadedLibrary.path(described);
        assertAll(described,
                () -> assertTrue(library.getFileName().toString().startsWith("libcuda.so"), "file name"),
                () -> assertTrue(Files.isRegularFile(library), "file exists"));
    }

    @Test
    void deviceCountMatchesNvidiaSmi() throws Exception {
        List<NvidiaSmi.Gpu> smi = NvidiaSmi.query();
        int count = Cuda.system().deviceCount();
        assertTrue(count >= 1, "the driver reports no device");
        // CUDA_VISIBLE_DEVICES hides GPUs from CUDA, never from nvidia-smi.
        if (System.getenv("CUDA_VISIBLE_DEVICES") == null) {
            assertEquals(smi.size(), count, () -> "nvidia-smi lists " + smi);
        }
    }

    @ParameterizedTest(name = "device {0}")
    @MethodSource("deviceOrdinals")
    void deviceMatchesNvidiaSmi(int ordinal, TestReporter reporter) throws Exception {
        Device device = Cuda.system().device(ordinal);
        PciBusId pci = PciBusId.parse(device.pciBusId());
        // CUDA orders devices fastest first, nvidia-smi by PCI address: match by address.
        NvidiaSmi.Gpu smi = NvidiaSmi.query().stream().filter(g -> g.pciBusId().equals(pci)).findFirst()
                .orElseThrow(() -> new AssertionError("nvidia-smi lists no GPU at PCI " + pci));
        DeviceCapabilities caps = device.capabilities();
        long totalMiB = device.totalMemoryBytes() / MIB;
        reporter.publishEntry("device " + ordinal, device.name() + ", compute " + caps.computeCapability() + ", PCI "
                + pci + ", " + totalMiB + " MiB; nvidia-smi: " + smi);
        assertAll(
                () -> assertEquals(smi.name(), device.name(), "name"),
                () -> assertEquals(smi.computeCapability(), caps.computeCapability(), "compute capability"),
                // nvidia-smi's total includes what the driver and firmware reserve; cuDeviceTotalMem
                // may leave that out, so the driver's figure lies between total - reserved and total.
                () -> assertTrue(totalMiB >= smi.memoryTotalMiB() - smi.memoryReservedMiB() - MEMORY_TOLERANCE_MIB
                        && totalMiB <= smi.memoryTotalMiB() + MEMORY_TOLERANCE_MIB,
                        () -> "total memory " + totalMiB + " MiB, nvidia-smi: total " + smi.memoryTotalMiB()
                                + " MiB, reserved " + smi.memoryReservedMiB() + " MiB"),
                () -> assertEquals(totalMiB, caps.totalMemoryBytes() / MIB, "capabilities().totalMemoryBytes()"));
    }

    @ParameterizedTest(name = "device {0}")
    @MethodSource("deviceOrdinals")
    void deviceLimitsAreSane(int ordinal) {
        Device device = Cuda.system().device(ordinal);
        DeviceCapabilities caps = device.capabilities();
        // The raw attributes, because capabilities() substitutes fallbacks for failed queries:
        // only the driver's own numbers show that the queries work.
        int multiprocessors = device.attribute(DeviceAttribute.MULTIPROCESSOR_COUNT);
        int threadsPerBlock = device.attribute(DeviceAttribute.MAX_THREADS_PER_BLOCK);
        int shared = device.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK);
        int sharedOptIn = device.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        assertAll(
                // Every device a CUDA 13 driver supports is compute capability 7.5 or newer,
                // and every device since 3.0 allows 1024 threads per block.
                () -> assertTrue(caps.computeMajor() >= 3, () -> "compute capability " + caps.computeCapability()),
                () -> assertEquals(1024, threadsPerBlock, "raw max threads per block"),
                () -> assertTrue(multiprocessors > 0, () -> "raw multiprocessor count " + multiprocessors),
                () -> assertTrue(shared > 0, () -> "raw shared memory per block " + shared),
                () -> assertTrue(sharedOptIn >= shared,
                        () -> "raw opt-in shared memory " + sharedOptIn + " < default " + shared),
                () -> assertEquals(multiprocessors, caps.multiprocessorCount(), "capabilities().multiprocessorCount()"),
                () -> assertEquals(threadsPerBlock, caps.maxThreadsPerBlock(), "capabilities().maxThreadsPerBlock()"),
                () -> assertEquals(shared, caps.sharedMemoryPerBlock(), "capabilities().sharedMemoryPerBlock()"),
                () -> assertEquals(sharedOptIn, caps.sharedMemoryPerBlockOptIn(),
                        "capabilities().sharedMemoryPerBlockOptIn()"));
    }
}
