package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An image the driver rejects is named in the exception, and kept for inspection where the setting says. */
class ImageRejectionTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final String ptx = Ptx.module("store", "u64", "u32");
    private final ModuleImage image = ModuleImage.ptx("kernels/store.ptx", ptx);

    @AfterEach
    void unset() {
        System.clearProperty(ImageRejectedException.SAVE_PROPERTY);
    }

    @Test
    void aRejectedImageIsNamedAndTheMessageSaysHowToKeepIt() {
        sim.faults.replaceOnce("cuModuleLoadData", CudaDriver.CUDA_ERROR_INVALID_PTX());
        ImageRejectedException e = assertThrows(ImageRejectedException.class, () -> ctx.modules().load("m", image));
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_PTX(), e.result());
        assertEquals("kernels/store.ptx", e.artifact());
        assertEquals(ModuleImage.Kind.PTX, e.kind());
        assertEquals(image.sha256(), e.sha256());
        assertTrue(e.savedCopy().isEmpty());
        assertTrue(e.getMessage().contains("The image: PTX from kernels/store.ptx (sha256 " + image.sha256() + ")"),
                e.getMessage());
        assertTrue(e.getMessage().contains("-D" + ImageRejectedException.SAVE_PROPERTY + "=DIRECTORY"), e.getMessage());
    }

    @Test
    void withTheSettingTheRejectedImageIsKeptAsItWasGiven(@TempDir Path dir) throws IOException {
        Path keep = dir.resolve("rejected");
        System.setProperty(ImageRejectedException.SAVE_PROPERTY, keep.toString());
        sim.faults.replaceOnce("cuModuleLoadData", CudaDriver.CUDA_ERROR_INVALID_IMAGE());
        ImageRejectedException e = assertThrows(ImageRejectedException.class, () -> ctx.modules().load("m", image));

        Path copy = keep.resolve("store.ptx-" + image.sha256().substring(0, 12) + ".ptx");
        assertEquals(copy.toString(), e.savedCopy().orElseThrow());
        assertArrayEquals(ptx.getBytes(StandardCharsets.UTF_8), Files.readAllBytes(copy), "the PTX, without the NUL");
        assertTrue(e.getMessage().contains("kept as " + copy), e.getMessage());
    }

    @Test
    void aFailureThatIsNotTheImagesStaysACudaException() {
        sim.faults.replaceOnce("cuModuleLoadData", CudaDriver.CUDA_ERROR_INVALID_CONTEXT());
        CudaException e = assertThrows(CudaException.class, () -> ctx.modules().load("m", image));
        assertEquals(CudaException.class, e.getClass());
    }

    @Test
    void aCopyThatCannotBeWrittenLeavesTheRejectionAndSaysWhy(@TempDir Path dir) throws IOException {
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");
        System.setProperty(ImageRejectedException.SAVE_PROPERTY, notADirectory.toString());
        sim.faults.replaceOnce("cuModuleLoadData", CudaDriver.CUDA_ERROR_INVALID_IMAGE());
        ImageRejectedException e = assertThrows(ImageRejectedException.class, () -> ctx.modules().load("m", image));
        assertTrue(e.savedCopy().isEmpty());
        assertEquals(1, e.getCause().getSuppressed().length, "the write's failure is kept beside the rejection");
    }
}
