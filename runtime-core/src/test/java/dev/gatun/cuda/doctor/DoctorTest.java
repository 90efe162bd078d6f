package dev.gatun.cuda.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.Gatun;
import dev.gatun.cuda.GpuCoredumps;
import dev.gatun.cuda.nvrtc.KernelCache;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FaultPlan;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Doctor reads Gatun's settings from system properties, through runtime-core's own parsing; each
 * test sets the ones it needs (the kernel cache always in a temporary folder, never the user's)
 * and puts the previous values back.
 */
class DoctorTest {

    private static final List<String> SETTINGS = List.of(KernelCache.SWITCH_PROPERTY, KernelCache.DIRECTORY_PROPERTY,
            DevicePoolOptions.MAX_RETAINED_BYTES_PROPERTY, DevicePoolOptions.PROFILE_PROPERTY, ContextOptions.LEAK_TRACKING_PROPERTY,
            ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY, KernelCache.AUTHENTICATE_PROPERTY, KernelCache.KEY_FILE_PROPERTY, KernelCache.MAX_ENTRY_BYTES_PROPERTY,
            KernelCache.MAX_BYTES_PROPERTY, GpuCoredumps.PROPERTY, GpuCoredumps.FILE_PROPERTY,
            GpuCoredumps.LIGHTWEIGHT_PROPERTY);

    private final Map<String, String> saved = new HashMap<>();

    @TempDir
    Path temp;

    @BeforeEach
    void isolateSettings() {
        for (String key : SETTINGS) {
            saved.put(key, System.getProperty(key));
            System.clearProperty(key);
        }
        System.setProperty(KernelCache.DIRECTORY_PROPERTY, temp.resolve("kernels").toString());
    }

    @AfterEach
    void restoreSettings() {
        saved.forEach((key, value) -> {
            if (value == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, value);
            }
        });
    }

    private static Doctor withDevices(int count) {
        Cuda cuda = FakeCuda.over(new FakeDriverApi().deviceCount(count));
        return new Doctor(() -> cuda, NO_NVRTC, Map.of());
    }

    private static final Supplier<NvrtcLibrary> NO_NVRTC = () -> {
        throw new CudaUnavailableException("No NVRTC could be loaded. Tried:\n  - libnvrtc.so.13: not found", List.of());
    };

    private static String run(Doctor doctor, int expectedExit) {
        StringBuilder report = new StringBuilder();
        int exit = doctor.run(report).exitStatus();
        String out = report.toString();
        assertEquals(expectedExit, exit, out);
        return out;
    }

    @Test
    void sectionsOfOtherModulesFollowNvrtcAndOneThatThrowsIsReportedNotThrown() {
        Cuda cuda = FakeCuda.over(new FakeDriverApi().deviceCount(1));
        DoctorSection libraries = line -> {
            line.accept("cublas:  /opt/libcublas.so.13 (dynamic loader)");
            line.accept("         version 13.1.0");
        };
        DoctorSection broken = line -> {
            throw new IllegalStateException("broken section");
        };
        String out = run(new Doctor(() -> cuda, NO_NVRTC, Map.of(), () -> List.of(libraries, broken)), Diagnosis.EXIT_OK);
        assertTrue(out.indexOf("nvrtc:   NOT FOUND") < out.indexOf("cublas:  /opt/libcublas.so.13"), out);
        assertTrue(out.contains("         version 13.1.0"), out);
        assertTrue(out.contains("failed: java.lang.IllegalStateException: broken section"), out);
        assertTrue(out.contains("Result: 1 usable device"), out);
    }

    @Test
    void withoutADriverItExplainsWhatWasTriedAndExitsThree() {
        Supplier<Cuda> none = () -> {
            throw new CudaUnavailableException("No CUDA driver could be loaded. Tried:\n  - /usr/lib64/libcuda.so.1: no such file\n"
                    + "Install the NVIDIA GPU driver", List.of("/usr/lib64/libcuda.so.1: no such file"));
        };
        String out = run(new Doctor(none, NO_NVRTC, Map.of()), Diagnosis.EXIT_NO_DEVICE);
        assertTrue(out.contains("driver:  NOT FOUND"), out);
        assertTrue(out.contains("/usr/lib64/libcuda.so.1: no such file"), out);
        assertTrue(out.contains("Install the NVIDIA GPU driver"), out);
        assertTrue(out.contains("nvrtc:   NOT FOUND"), out);
        assertTrue(out.contains("no usable CUDA device"), out);
        assertFalse(out.contains("\tat "), "no stack trace");
    }

    @Test
    void withADeviceItListsItAndExitsZero() {
        Cuda cuda = FakeCuda.over(new FakeDriverApi().deviceCount(2));
        String out = run(new Doctor(() -> cuda, NO_NVRTC, Map.of()), Diagnosis.EXIT_OK);
        assertTrue(out.contains("supports CUDA 13.0 (13000)"), out);
        assertTrue(out.contains("devices: 2"), out);
        assertTrue(out.contains("[1] Simulated GPU 1, compute capability 9.0, 132 multiprocessors, 141.0 GiB, PCI 0000:07:00.0"), out);
        assertTrue(out.contains("Result: 2 usable devices."), out);
    }

    @Test
    void aDriverWithNoDevicesIsNotUsable() {
        Cuda cuda = FakeCuda.over(new FakeDriverApi().deviceCount(0));
        String out = run(new Doctor(() -> cuda, NO_NVRTC, Map.of()), Diagnosis.EXIT_NO_DEVICE);
        assertTrue(out.contains("devices: 0"), out);
    }

    @Test
    void itPrintsTheVersionsOfGatunTheJvmAndTheOs() {
        String out = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(out.contains("gatun:   " + Gatun.version() + "\n"), out);
        assertTrue(out.contains("java:    " + System.getProperty("java.version") + " ("), out);
        assertTrue(out.contains(System.getProperty("java.vm.name")), out);
        assertTrue(out.contains("os:      " + System.getProperty("os.name") + " " + System.getProperty("os.version")
                + " (" + System.getProperty("os.arch") + ")"), out);
    }

    @Test
    void itPrintsTheSettingsInForce() throws IOException {
        Path cache = temp.resolve("kernels");
        String out = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(out.contains("kernel cache:  " + cache + " (not created yet: the first compile makes it, mode 0700), "
                + "least recently used entries evicted over 268435456 bytes (gatun.kernelCache.maxBytes)"), out);
        assertTrue(out.contains("device pool:   keeps up to 2147483648 bytes for reuse; call-site profiling off"), out);
        assertTrue(out.contains("leak tracking: off"), out);
        assertTrue(out.contains("oom ladder:    on (an allocation that runs out of memory frees, trims and "
                + "synchronizes, then tries again)"), out);
        assertFalse(Files.exists(cache), "doctor made the cache directory");

        Files.createDirectory(cache, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        System.setProperty(KernelCache.MAX_BYTES_PROPERTY, "1048576");
        String again = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(again.contains("kernel cache:  " + cache + " (writable), least recently used entries evicted over "
                + "1048576 bytes"), again);
        try (Stream<Path> left = Files.list(cache)) {
            assertEquals(List.of(), left.toList(), "the write probe is removed");
        }
    }

    @Test
    void aCacheThatIsOffIsSaidToBeOff() {
        System.setProperty(KernelCache.SWITCH_PROPERTY, "off");
        String out = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(out.contains("kernel cache:  off (gatun.kernelCache=off)"), out);
    }

    @Test
    void anUnwritableKernelCacheDirectoryIsReported() throws IOException {
        // Below a regular file: nobody, root included, can create it.
        Path cache = Files.writeString(temp.resolve("a-file"), "not a directory").resolve("kernels");
        System.setProperty(KernelCache.DIRECTORY_PROPERTY, cache.toString());
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("kernel cache:  " + cache + " NOT WRITABLE"), out);
        assertTrue(out.contains("set -Dgatun.kernelCache.dir to a writable directory, or -Dgatun.kernelCache=off"), out);
        assertTrue(out.contains("Result: 1 usable device, but 1 setting needs attention (above)."), out);
    }

    @Test
    void aKernelCacheDirectoryThatDoesNotExistIsReportedAndNotCreated() {
        Path cache = temp.resolve("not").resolve("yet").resolve("kernels");
        System.setProperty(KernelCache.DIRECTORY_PROPERTY, cache.toString());
        String out = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(out.contains("kernel cache:  " + cache + " (not created yet"), out);
        assertFalse(Files.exists(temp.resolve("not")), "doctor created a directory on the way to the cache");
    }

    @Test
    void aBadKernelCacheSwitchOrCapIsReportedWithRuntimeCoresMessage() {
        System.setProperty(KernelCache.SWITCH_PROPERTY, "sometimes");
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("kernel cache:  WRONG: system property gatun.kernelCache is 'sometimes'"), out);
        System.clearProperty(KernelCache.SWITCH_PROPERTY);
        System.setProperty(KernelCache.MAX_BYTES_PROPERTY, "lots");
        String cap = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(cap.contains("kernel cache:  WRONG: system property gatun.kernelCache.maxBytes is 'lots'"), cap);
    }

    @Test
    void aBadPoolBoundIsReportedWithRuntimeCoresMessage() {
        System.setProperty(DevicePoolOptions.MAX_RETAINED_BYTES_PROPERTY, "lots");
        String out = run(withDevices(2), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("device pool:   WRONG: system property gatun.pool.bytes is 'lots'; set it to a whole number of bytes"), out);
        assertTrue(out.contains("opening a context will fail"), out);
        assertTrue(out.contains("Result: 2 usable devices, but 1 setting needs attention (above)."), out);
    }

    @Test
    void aBadPoolProfilingSwitchIsReported() {
        System.setProperty(DevicePoolOptions.PROFILE_PROPERTY, "maybe");
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("device pool:   WRONG: system property gatun.pool.profile is 'maybe'; set it to true or false"), out);
    }

    @Test
    void aBadLeakTrackingSwitchIsReportedNotReadAsOff() {
        System.setProperty(ContextOptions.LEAK_TRACKING_PROPERTY, "yes");
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("leak tracking: WRONG: system property gatun.leakTracking is 'yes'; set it to true or "
                + "false"), out);
        assertFalse(out.contains("leak tracking: off"), out);
        assertTrue(out.contains("Result: 1 usable device, but 1 setting needs attention (above)."), out);
    }

    @Test
    void aBadOutOfMemoryLadderSwitchIsReportedUnderItsOwnName() {
        System.setProperty(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY, "off");
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("oom ladder:    WRONG: system property gatun.oomLadder is 'off'; set it to true or "
                + "false"), out);
        assertFalse(out.contains("leak tracking: WRONG"), out);
        System.setProperty(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY, "false");
        assertTrue(run(withDevices(1), Diagnosis.EXIT_OK).contains("oom ladder:    off (an allocation that runs out of "
                + "memory fails at once)"));
    }

    @Test
    void aKernelCacheDirectoryOthersCanWriteIsReportedAsNotUsed() throws IOException {
        Path shared = Files.createDirectory(temp.resolve("shared"));
        Files.setPosixFilePermissions(shared, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        System.setProperty(KernelCache.DIRECTORY_PROPERTY, shared.toString());
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("kernel cache:  " + shared + " NOT USED: it is writable by its group or others"), out);
        System.setProperty(KernelCache.AUTHENTICATE_PROPERTY, "true");
        System.setProperty(KernelCache.KEY_FILE_PROPERTY, temp.resolve("key").resolve("kernel-cache.key").toString());
        out = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(out.contains("kernel cache:  " + shared + " (writable), entries authenticated with the key in "
                + temp.resolve("key").resolve("kernel-cache.key")), out);
    }

    @Test
    void aRelativeKernelCacheDirectoryIsWrongAndNothingIsCreated() {
        System.setProperty(KernelCache.DIRECTORY_PROPERTY, "relative/kernels");
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("kernel cache:  WRONG: system property gatun.kernelCache.dir is 'relative/kernels', "
                + "which is not an absolute path"), out);
        assertFalse(Files.exists(Path.of("relative")), "created in the working directory");
    }

    @Test
    void withoutADeviceTheExitSaysSoEvenWhenASettingIsWrong() {
        System.setProperty(DevicePoolOptions.MAX_RETAINED_BYTES_PROPERTY, "-1");
        String out = run(withDevices(0), Diagnosis.EXIT_NO_DEVICE);
        assertTrue(out.contains("device pool:   WRONG: system property gatun.pool.bytes is '-1'"), out);
        assertTrue(out.contains("1 setting needs attention (above)"), out);
    }

    @Test
    void gpuCoredumpsAreReportedOffOrWithWhereTheyGo() {
        assertTrue(run(withDevices(1), Diagnosis.EXIT_OK).contains("gpu coredumps: off (-Dgatun.coredump=true writes one "
                + "when a kernel faults)"));
        System.setProperty(GpuCoredumps.PROPERTY, "true");
        System.setProperty(GpuCoredumps.FILE_PROPERTY, "/var/dumps/core_%p");
        String out = run(withDevices(1), Diagnosis.EXIT_OK);
        assertTrue(out.contains("gpu coredumps: on, lightweight, written to /var/dumps/core_%p when a kernel faults; the "
                + "JVM survives (CU_COREDUMP_SKIP_ABORT); open one with cuda-gdb -ex \"target cudacore FILE\""), out);
    }

    @Test
    void aBadCoredumpSwitchIsReportedUnderItsOwnName() {
        System.setProperty(GpuCoredumps.PROPERTY, "on");
        String out = run(withDevices(1), Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("gpu coredumps: WRONG: system property gatun.coredump is 'on'; set it to true or false"),
                out);
        assertFalse(out.contains("leak tracking: WRONG"), out);
        assertTrue(out.contains("Result: 1 usable device, but 1 setting needs attention (above)."), out);
    }

    @Test
    void theDriversCoredumpEnvironmentIsShownAndAnAbortingOneNeedsAttention() {
        Cuda cuda = FakeCuda.over(new FakeDriverApi());
        Doctor doctor = new Doctor(() -> cuda, NO_NVRTC, Map.of("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1",
                "CUDA_COREDUMP_FILE", "/tmp/c_%p"));
        String out = run(doctor, Diagnosis.EXIT_BAD_SETTINGS);
        assertTrue(out.contains("environment CUDA_COREDUMP_FILE=/tmp/c_%p (the driver's; it takes precedence over "
                + "Gatun's setting)"), out);
        assertTrue(out.contains("ABORTS: with CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 and no skip_abort"), out);

        Doctor skipping = new Doctor(() -> cuda, NO_NVRTC, Map.of("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1",
                "CUDA_COREDUMP_GENERATION_FLAGS", "skip_global_memory,skip_abort"));
        assertFalse(run(skipping, Diagnosis.EXIT_OK).contains("ABORTS"));
    }

    @Test
    void aDeviceFilterThatHidesEveryDeviceIsShownBesideTheDriversAnswer() {
        // The driver loads and reports no device ...
        Cuda none = FakeCuda.over(new FakeDriverApi().deviceCount(0));
        String out = run(new Doctor(() -> none, NO_NVRTC, Map.of("CUDA_VISIBLE_DEVICES", "")), Diagnosis.EXIT_NO_DEVICE);
        assertTrue(out.contains("devices: 0\n         environment CUDA_VISIBLE_DEVICES= (the driver shows only the "
                + "devices it lists, here none)\n"), out);
        // ... or, as drivers do, refuses cuInit with CUDA_ERROR_NO_DEVICE: the loader's reason, then the filter.
        Supplier<Cuda> refused = () -> FakeCuda.over(new FakeDriverApi(), new FaultPlan().replaceAlways("cuInit", 100));
        out = run(new Doctor(refused, NO_NVRTC, Map.of("CUDA_VISIBLE_DEVICES", "")), Diagnosis.EXIT_NO_DEVICE);
        assertTrue(out.contains("driver:  NOT FOUND\n         simulated driver loaded, but cuInit failed: "
                + "CUDA_ERROR_NO_DEVICE (100)"), out);
        assertTrue(out.contains("environment CUDA_VISIBLE_DEVICES= (the driver shows only the devices it lists, here "
                + "none)"), out);
        // A filter that leaves a device is shown too, without "none".
        Cuda one = FakeCuda.over(new FakeDriverApi());
        out = run(new Doctor(() -> one, NO_NVRTC, Map.of("CUDA_VISIBLE_DEVICES", "1")), Diagnosis.EXIT_OK);
        assertTrue(out.contains("environment CUDA_VISIBLE_DEVICES=1 (the driver shows only the devices it lists)\n"),
                out);
        assertFalse(run(withDevices(1), Diagnosis.EXIT_OK).contains("CUDA_VISIBLE_DEVICES"), "unset: not shown");
    }

    @Test
    void theProcesssReportIsTheOneTheCommandLinePrintsWithAVerdictThatMatchesTheDriver() {
        StringBuilder report = new StringBuilder();
        Diagnosis diagnosis = Doctor.diagnose(report);
        String out = report.toString();
        assertTrue(out.startsWith("Gatun doctor\ngatun:   " + Gatun.version() + "\n"), out);
        assertTrue(out.contains("\nsettings:\n"), out);
        if (!Cuda.isAvailable()) {
            // This machine (CI): no driver, so no usable device, whatever the settings say.
            assertTrue(out.contains("driver:  NOT FOUND"), out);
            assertEquals(Diagnosis.EXIT_NO_DEVICE, diagnosis.exitStatus(), out);
            assertTrue(out.contains("\nResult: no usable CUDA device"), out);
        } else {
            assertEquals(Cuda.system().deviceCount() > 0, diagnosis.hasUsableGpu(), out);
        }
    }

    @Test
    void aReportThatCannotBeWrittenFailsUncheckedNamingTheReport() {
        Appendable broken = new Appendable() {
            @Override
            public Appendable append(CharSequence text) throws IOException {
                throw new IOException("disk full");
            }

            @Override
            public Appendable append(CharSequence text, int start, int end) throws IOException {
                throw new IOException("disk full");
            }

            @Override
            public Appendable append(char c) throws IOException {
                throw new IOException("disk full");
            }
        };
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> withDevices(1).run(broken));
        assertEquals("the doctor's report could not be written", e.getMessage());
        assertEquals("disk full", e.getCause().getMessage());
    }

    @Test
    void theVerdictFollowsTheCountsAndRefusesNegativeOnes() {
        assertEquals(Diagnosis.EXIT_OK, new Diagnosis(1, 0).exitStatus());
        assertEquals(Diagnosis.EXIT_BAD_SETTINGS, new Diagnosis(2, 1).exitStatus());
        assertEquals(Diagnosis.EXIT_NO_DEVICE, new Diagnosis(0, 0).exitStatus());
        assertEquals(Diagnosis.EXIT_NO_DEVICE, new Diagnosis(0, 3).exitStatus(), "no device says so first");
        assertFalse(new Diagnosis(0, 0).hasUsableGpu());
        assertFalse(new Diagnosis(1, 1).isEverySettingRight());
        assertThrows(IllegalArgumentException.class, () -> new Diagnosis(-1, 0));
    }
}
