package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.CubinBuilder;
import dev.gatun.cuda.testing.FatbinBuilder;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** A malformed module image is rejected when it is made, before the driver could be handed it. */
class ModuleImageCheckTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    static byte[] realCubin() {
        try (InputStream in = ModuleImageCheckTest.class.getResourceAsStream("/dev/gatun/cuda/images/saxpy-sm90.cubin")) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** The image from {@code artifact} is refused as bad input, by the image checks, naming it. */
    static IllegalArgumentException assertRejected(String artifact, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().startsWith("module image " + artifact + " "), e.getMessage());
        return e;
    }

    @Test
    void aCubinCutInHalfIsRejectedWithWhatIsWrongAndWhere() {
        byte[] cubin = realCubin();
        IllegalArgumentException e = assertRejected("half.cubin",
                () -> ModuleImage.of("half.cubin", Arrays.copyOf(cubin, cubin.length / 2)));
        assertEquals("module image half.cubin (CUBIN, 2,848 bytes) is malformed: program header table [offset 0x14f0,"
                + " 6 entries of 56 bytes] ends past the image's 2,848 bytes; it is truncated, corrupt or no GPU image, and"
                + " was not handed to the driver. Load the complete file as nvcc, NVRTC or fatbinary wrote it", e.getMessage());
    }

    @Test
    void aRejectedImageNeverReachesTheDriverAndChangesNothing() {
        sim.faults.countCalls();
        byte[] cubin = CubinBuilder.cubin("k", Ptx.module("k", "u64"));
        ModuleInfo loaded = ctx.modules().load("m", ModuleImage.of("k.cubin", cubin), "k");
        assertEquals(1, sim.faults.calls("cuModuleLoadData"), "a sound cubin is loaded");
        for (int length : new int[] {1, 63, 64, cubin.length / 2, cubin.length - 1}) {
            assertRejected("cut.cubin",
                    () -> ctx.modules().load("m", ModuleImage.of("cut.cubin", Arrays.copyOf(cubin, length)), "k"));
        }
        byte[] fatbin = FatbinBuilder.fatbin(FatbinBuilder.Entry.elf(90, cubin));
        assertRejected("cut.fatbin",
                () -> ctx.modules().load("m", ModuleImage.of("cut.fatbin", Arrays.copyOf(fatbin, fatbin.length - 8))));
        assertRejected("x.ptx", () -> ctx.modules().load("m", ModuleImage.ptx("x.ptx", "ret;")));
        assertEquals(1, sim.faults.calls("cuModuleLoadData"), "no rejected image reached cuModuleLoadData");
        assertEquals(loaded, ctx.modules().info("m").orElseThrow());
        try (Kernel k = ctx.modules().kernel("m", "k")) {
            assertEquals("k", k.name());
        }
    }

    @Test
    void filesAndResourcesAreCheckedToo(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("cut.cubin");
        byte[] cubin = realCubin();
        Files.write(file, Arrays.copyOf(cubin, 100));
        IllegalArgumentException e = assertRejected(file.toString(), () -> ModuleImage.fromFile(file));
        assertTrue(e.getMessage().contains("(CUBIN, 100 bytes) is malformed"), e.getMessage());
        assertEquals(ModuleImage.Kind.FATBIN,
                ModuleImage.fromResource(ModuleImageCheckTest.class, "images/saxpy-sm90-sm80.fatbin").kind());
    }

    @Test
    void bytesThatAreNoImageAreRejectedRatherThanLoadedAsPtx() {
        IllegalArgumentException e = assertRejected("photo.png",
                () -> ModuleImage.of("photo.png", new byte[] {(byte) 0x89, 'P', 'N', 'G', 13, 10, 26, 10}));
        assertTrue(e.getMessage().contains("no .version directive, so it is not PTX text; nor is it a CUBIN or a fatbin"
                + " (its first bytes are 89 50 4e 47"), e.getMessage());
        assertRejected("empty", () -> ModuleImage.of("empty", new byte[0]));
    }

    @Test
    void ptxWithANulBeforeItsEndIsRejectedRatherThanSilentlyCut() {
        byte[] text = (Ptx.module("k") + "\0" + Ptx.module("j")).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        IllegalArgumentException e = assertRejected("two.ptx", () -> ModuleImage.of("two.ptx", text));
        assertTrue(e.getMessage().contains("the driver reads PTX only up to its first NUL"), e.getMessage());
        byte[] padded = Arrays.copyOf(Ptx.module("k").getBytes(java.nio.charset.StandardCharsets.US_ASCII), 200);
        assertArrayEquals(padded, ModuleImage.of("padded.ptx", padded).loadableBytes(), "trailing NULs are padding");
    }
}
