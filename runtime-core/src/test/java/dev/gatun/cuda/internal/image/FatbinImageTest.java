package dev.gatun.cuda.internal.image;

import static dev.gatun.cuda.internal.image.Images.put16;
import static dev.gatun.cuda.internal.image.Images.put32;
import static dev.gatun.cuda.internal.image.Images.put64;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.CubinBuilder;
import dev.gatun.cuda.testing.FatbinBuilder;
import dev.gatun.cuda.testing.FatbinBuilder.Entry;
import dev.gatun.cuda.testing.Ptx;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class FatbinImageTest {

    private static final byte[] CUBIN = CubinBuilder.cubin("k", Ptx.module("k", "u64"));
    private static final byte[] FATBIN = FatbinBuilder.fatbin(Entry.elf(90, CUBIN), Entry.ptx(90, Ptx.module("k", "u64")),
            Entry.compressed(2, 80, new byte[] {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd, 1, 2, 3}, 4096));
    /** Where the first entry's header starts. */
    private static final int ENTRY = FatbinBuilder.HEADER_SIZE;

    private static String rejected(byte[] fatbin) {
        return assertThrows(ImageFormatException.class, () -> FatbinImage.check(MemorySegment.ofArray(fatbin))).getMessage();
    }

    private static void assertRejected(byte[] fatbin, String expected) {
        String message = rejected(fatbin);
        assertTrue(message.contains(expected), () -> "expected '" + expected + "' in: " + message);
    }

    private static void accepted(byte[] fatbin) {
        assertDoesNotThrow(() -> FatbinImage.check(MemorySegment.ofArray(fatbin)));
    }

    @Test
    void fatbinsAsNvccAndTheTestBuilderWriteThemPass() {
        accepted(FATBIN);
        accepted(Images.real("saxpy-sm90-sm80.fatbin"));
        accepted(Images.real("saxpy-sm90-sm80-ptx-zstd.fatbin"));
        accepted(Images.real("saxpy-sm90-sm80-all-zstd.fatbin"));
        accepted(Arrays.copyOf(FATBIN, FATBIN.length + 16)); // bytes after the fatbin are not read
        accepted(FatbinBuilder.fatbin());
    }

    @Test
    void aFatbinCutInHalfIsRejectedForItsFatSize() {
        byte[] real = Images.real("saxpy-sm90-sm80.fatbin");
        assertEquals("its header (16 bytes) and entries (fat size 12,296 bytes) end past the image's 6,156 bytes",
                rejected(Arrays.copyOf(real, real.length / 2)));
    }

    @Test
    void theHeaderHasTheMagicVersionOneAndSizesWithinTheImage() {
        assertEquals("it is 15 bytes, shorter than the 16-byte fatbin header", rejected(Arrays.copyOf(FATBIN, 15)));
        assertRejected(put32(FATBIN, 0, 0xBA55ED51L), "does not start with the fatbin magic 50 ed 55 ba (it starts 51 ed 55 ba)");
        assertRejected(put16(FATBIN, 4, 2), "it is fatbin version 2");
        assertRejected(put16(FATBIN, 6, 8), "or the header is shorter than 16 bytes");
        assertRejected(put64(FATBIN, 8, -1), "entries (fat size 18446744073709551615 bytes) end past the image's");
    }

    @Test
    void eachEntryHeaderAndPayloadLieWithinTheFatbin() {
        assertRejected(put32(FATBIN, ENTRY + 4, 32), "entry 0 (ELF for sm_90, at offset 0x10) has an entry header of"
                + " 32 bytes");
        assertRejected(put32(FATBIN, ENTRY + 4, 0x7fffffff), "entry 0 (ELF for sm_90, at offset 0x10) has an entry header"
                + " of 2,147,483,647 bytes");
        assertRejected(put64(FATBIN, ENTRY + 8, 1L << 33), "entry 0 (ELF for sm_90, at offset 0x10) has a payload [offset"
                + " 0x50, 8,589,934,592 bytes] that ends past the fatbin's");
        assertRejected(put64(FATBIN, ENTRY + 8, Long.MIN_VALUE), "has a payload [offset 0x50, 9223372036854775808 bytes]");
        byte[] longer = put64(Arrays.copyOf(FATBIN, FATBIN.length + 8), 8, FATBIN.length + 8 - 16);
        assertRejected(longer, "it ends 8 bytes after the start of entry 3 (offset 0x" + Integer.toHexString(FATBIN.length)
                + "), inside its 64-byte entry header");
    }

    @Test
    void anUncompressedCubinEntryIsCheckedAsACubin() {
        byte[] half = Arrays.copyOf(CUBIN, CUBIN.length / 2);
        assertRejected(FatbinBuilder.fatbin(Entry.elf(90, half)), "entry 0 (ELF for sm_90, at offset 0x10) holds a"
                + " malformed ELF: program header table [offset ");
        assertRejected(FatbinBuilder.fatbin(Entry.elf(90, half)), "ends past the entry's");
        assertRejected(FatbinBuilder.fatbin(Entry.elf(90, "not an elf".getBytes(StandardCharsets.US_ASCII))),
                "holds a malformed ELF: it is 16 bytes, shorter than the 64-byte ELF64 header");
        accepted(FatbinBuilder.fatbin(Entry.compressed(2, 90, half, CUBIN.length))); // compressed: the driver's to unpack
    }

    @Test
    void aPtxEntryIsNulTerminatedPtxWithinItsPayload() {
        byte[] text = "     .version 8.5\n.target sm_90\n".getBytes(StandardCharsets.US_ASCII); // 32 bytes: no padding
        assertRejected(FatbinBuilder.fatbin(new Entry(1, 90, text, false, 0)), "entry 0 (PTX for sm_90, at offset 0x10) has"
                + " no NUL in its payload of 32 bytes");
        assertRejected(FatbinBuilder.fatbin(Entry.ptx(90, "// nothing\n")), "entry 0 (PTX for sm_90, at offset 0x10) holds"
                + " malformed PTX: it has no .version directive");
    }

    @Test
    void aCompressedEntrysDataLiesWithinItsPayload() {
        int third = ENTRY + 64 + (CUBIN.length + 7 & ~7) + 64 + (Ptx.module("k", "u64").length() + 1 + 7 & ~7);
        assertRejected(put32(FATBIN, third + 16, 9), "entry 2 (ELF for sm_80, at offset 0x" + Integer.toHexString(third)
                + ") claims 9 bytes of compressed data in a payload of 8 bytes");
    }
}
