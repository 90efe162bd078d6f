package dev.gatun.cuda.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class DoctorTest {

    private static final Supplier<NvrtcLibrary> NO_NVRTC = () -> {
        throw new CudaUnavailableException("No NVRTC could be loaded. Tried:\n  - libnvrtc.so.13: not found", List.of());
    };

    private static String run(Doctor doctor, int expectedExit) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exit = doctor.run(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(expectedExit, exit, out);
        return out;
    }

    @Test
    void withoutADriverItExplainsWhatWasTriedAndExitsThree() {
        Supplier<Cuda> none = () -> {
            throw new CudaUnavailableException("No CUDA driver could be loaded. Tried:\n  - /usr/lib64/libcuda.so.1: no such file\n"
                    + "Install the NVIDIA GPU driver", List.of("/usr/lib64/libcuda.so.1: no such file"));
        };
        String out = run(new Doctor(none, NO_NVRTC), Doctor.EXIT_NO_DEVICE);
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
        String out = run(new Doctor(() -> cuda, NO_NVRTC), Doctor.EXIT_OK);
        assertTrue(out.contains("supports CUDA 13.0 (13000)"), out);
        assertTrue(out.contains("devices: 2"), out);
        assertTrue(out.contains("[1] Simulated GPU 1, compute capability 9.0, 132 multiprocessors, 141.0 GiB, PCI 0000:07:00.0"), out);
        assertTrue(out.contains("Result: 2 usable devices."), out);
    }

    @Test
    void aDriverWithNoDevicesIsNotUsable() {
        Cuda cuda = FakeCuda.over(new FakeDriverApi().deviceCount(0));
        String out = run(new Doctor(() -> cuda, NO_NVRTC), Doctor.EXIT_NO_DEVICE);
        assertTrue(out.contains("devices: 0"), out);
    }

    @Test
    void unknownCommandsPrintUsage() throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = GatunCli.run(new String[] {"frobnicate"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(GatunCli.EXIT_USAGE, exit);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("usage: gatun <command>"));
    }
}
