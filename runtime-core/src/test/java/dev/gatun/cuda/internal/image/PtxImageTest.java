package dev.gatun.cuda.internal.image;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.testing.Ptx;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class PtxImageTest {

    private static String rejected(String text) {
        MemorySegment ptx = MemorySegment.ofArray(text.getBytes(StandardCharsets.ISO_8859_1));
        return assertThrows(ImageFormatException.class, () -> PtxImage.check(ptx)).getMessage();
    }

    private static void accepted(byte[] text) {
        assertDoesNotThrow(() -> PtxImage.check(MemorySegment.ofArray(text)));
    }

    @Test
    void ptxWithVersionAndTargetPassesWithOrWithoutTrailingNuls() {
        accepted(Ptx.module("k", "u64").getBytes(StandardCharsets.US_ASCII));
        accepted((Ptx.module("k") + "\0\0\0").getBytes(StandardCharsets.US_ASCII));
        accepted(Images.real("saxpy-sm90.ptx"));
    }

    @Test
    void bytesWithoutAVersionDirectiveAreNoImage() {
        assertEquals("it has no .version directive, so it is not PTX text; nor is it a CUBIN or a fatbin (its first bytes"
                + " are 6e 6f 74 20, not the ELF magic 7f 45 4c 46 nor the fatbin magic 50 ed 55 ba)", rejected("not ptx at all"));
        rejected("\u00ff\u00fe binary .versionX 8.5\n.target sm_90\n");
        rejected("// version 8.5\n.target sm_90\n");
    }

    @Test
    void ptxNeedsATargetDirective() {
        assertEquals("it has no .target directive; PTX names its target architecture after .version",
                rejected(".version 8.5\n.address_size 64\n"));
    }

    @Test
    void aNulBeforeTheEndWouldSilentlyCutTheText() {
        assertEquals("it has a NUL byte at offset 13 and more text after it (offset 14); the driver reads PTX only up to"
                + " its first NUL, so the rest would be silently dropped", rejected(".version 8.5\n\0.target sm_90\n"));
    }
}
