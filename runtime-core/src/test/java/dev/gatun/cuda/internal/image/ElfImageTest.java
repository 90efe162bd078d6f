package dev.gatun.cuda.internal.image;

import static dev.gatun.cuda.internal.image.Images.put16;
import static dev.gatun.cuda.internal.image.Images.put32;
import static dev.gatun.cuda.internal.image.Images.put64;
import static dev.gatun.cuda.internal.image.Images.put8;
import static dev.gatun.cuda.testing.CubinBuilder.NOTE;
import static dev.gatun.cuda.testing.CubinBuilder.NV_INFO;
import static dev.gatun.cuda.testing.CubinBuilder.RELA_TEXT;
import static dev.gatun.cuda.testing.CubinBuilder.SHSTRTAB;
import static dev.gatun.cuda.testing.CubinBuilder.STRTAB;
import static dev.gatun.cuda.testing.CubinBuilder.SYMTAB;
import static dev.gatun.cuda.testing.CubinBuilder.TEXT;
import static dev.gatun.cuda.testing.CubinBuilder.programHeader;
import static dev.gatun.cuda.testing.CubinBuilder.sectionHeader;
import static dev.gatun.cuda.testing.CubinBuilder.sectionOffset;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.CubinBuilder;
import dev.gatun.cuda.testing.Ptx;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ElfImageTest {

    private static final byte[] CUBIN = CubinBuilder.cubin("k", Ptx.module("k", "u64", "u32"));
    /** Section header fields. */
    private static final int SH_NAME = 0;
    private static final int SH_TYPE = 4;
    private static final int SH_FLAGS = 8;
    private static final int SH_OFFSET = 24;
    private static final int SH_SIZE = 32;
    private static final int SH_LINK = 40;
    private static final int SH_INFO = 44;
    private static final int SH_ADDRALIGN = 48;
    private static final int SH_ENTSIZE = 56;

    private static String rejected(byte[] elf) {
        return assertThrows(ImageFormatException.class, () -> ElfImage.check(MemorySegment.ofArray(elf))).getMessage();
    }

    private static void accepted(byte[] elf) {
        assertDoesNotThrow(() -> ElfImage.check(MemorySegment.ofArray(elf)));
    }

    private static void assertRejected(byte[] elf, String expected) {
        String message = rejected(elf);
        assertTrue(message.contains(expected), () -> "expected '" + expected + "' in: " + message);
    }

    private static int section(int index, int field) {
        return sectionHeader(CUBIN, index) + field;
    }

    @Test
    void cubinsAsNvccAndTheTestBuilderWriteThemPass() {
        accepted(CUBIN);
        accepted(Images.real("saxpy-sm90.cubin"));
        accepted(Images.real("saxpy-sm90-rdc.cubin"));
        assertTrue(CubinBuilder.SHARED_BYTES > CUBIN.length, "the built cubin has an SHT_NOBITS section larger than the file");
    }

    @Test
    void aCubinCutInHalfIsRejectedForItsProgramHeaderTable() {
        byte[] real = Images.real("saxpy-sm90.cubin");
        assertEquals("program header table [offset 0x14f0, 6 entries of 56 bytes] ends past the image's 2,848 bytes",
                rejected(Arrays.copyOf(real, real.length / 2)));
    }

    @Test
    void theIdentificationMustBeA64BitLittleEndianCudaElf() {
        assertEquals("it is 32 bytes, shorter than the 64-byte ELF64 header", rejected(Arrays.copyOf(CUBIN, 32)));
        assertRejected(put8(CUBIN, 0, 0x7e), "does not start with the ELF magic 7f 45 4c 46 (it starts 7e 45 4c 46)");
        assertRejected(put8(CUBIN, 4, 1), "ELF class 1, not ELFCLASS64");
        assertRejected(put8(CUBIN, 5, 2), "not little-endian");
        assertRejected(put8(CUBIN, 6, 0), "identification version 0");
        assertRejected(put16(CUBIN, 18, 62), "machine 62, not EM_CUDA (190)");
        assertRejected(put16(CUBIN, 52, 52), "ELF header size (e_ehsize) as 52 bytes");
    }

    @Test
    void theProgramHeaderTableAndEachHeadersBytesLieInTheImage() {
        assertRejected(put16(CUBIN, 54, 32), "program header entries of 32 bytes (e_phentsize)");
        assertRejected(put16(CUBIN, 56, 0xffff), "extended program header numbering");
        assertRejected(put64(CUBIN, 32, -256), "program header table [offset 0xffffffffffffff00, 3 entries of 56 bytes]"
                + " ends past the image's");
        assertRejected(put16(CUBIN, 56, 400), "program header table [offset ");
        int load = programHeader(CUBIN, 1);
        assertRejected(put64(CUBIN, load + 8, 0x7fffffff), "program header 1 (type 0x1) [offset 0x7fffffff, ");
        assertRejected(put64(CUBIN, load + 32, Long.MAX_VALUE), "program header 1 (type 0x1) [offset 0x40, "
                + "9,223,372,036,854,775,807 bytes] ends past the image's");
        assertRejected(put64(CUBIN, load + 40, 1), "program header 1 (PT_LOAD) has more bytes in the file");
        assertRejected(put64(CUBIN, load + 48, 12), "alignment 0xc, which is neither 0 nor a power of two");
    }

    @Test
    void theSectionHeaderTableLiesInTheImageWithElf64Entries() {
        assertRejected(put16(CUBIN, 60, 0), "no section headers (e_shnum 0)");
        assertRejected(put16(CUBIN, 60, 0xff00), "ELF reserves counts from 0xff00 up");
        assertRejected(put16(CUBIN, 58, 40), "section header entries of 40 bytes (e_shentsize)");
        assertRejected(put64(CUBIN, 40, CUBIN.length - 64), "section header table [offset 0x" + Integer.toHexString(
                CUBIN.length - 64) + ", 10 entries of 64 bytes] ends past the image's");
        assertRejected(put64(CUBIN, 40, -1), "section header table [offset 0xffffffffffffffff");
    }

    @Test
    void everySectionWithBytesInTheFileLiesInTheImage() {
        assertRejected(put64(CUBIN, section(TEXT, SH_SIZE), 1L << 40),
                "section 8 (.text.k) [offset 0x40, 1,099,511,627,776 bytes] ends past the image's");
        assertRejected(put64(CUBIN, section(TEXT, SH_OFFSET), Long.MAX_VALUE), "section 8 (.text.k) [offset 0x7fffffffffffffff");
        assertRejected(put64(CUBIN, section(TEXT, SH_SIZE), -1), "section 8 (.text.k) [offset 0x40, 18446744073709551615 bytes]");
        byte[] noBits = put32(CUBIN, section(TEXT, SH_TYPE), 8);
        accepted(put64(noBits, section(TEXT, SH_SIZE), 1L << 40)); // SHT_NOBITS: no bytes in the file
        byte[] cudaShared = put32(CUBIN, section(TEXT, SH_TYPE), 0x7000000a);
        accepted(put64(cudaShared, section(TEXT, SH_SIZE), 1L << 40)); // SHT_CUDA_SHARED, likewise
        assertRejected(put64(CUBIN, section(TEXT, SH_ADDRALIGN), 24), "section 8 (.text.k) has alignment 0x18");
    }

    @Test
    void sectionNamesLieInANulTerminatedNameTable() {
        assertRejected(put16(CUBIN, 62, 0), "names section 0 (e_shstrndx)");
        assertRejected(put16(CUBIN, 62, 10), "names section 10 (e_shstrndx) as its section name table, but it has sections"
                + " 1 to 9");
        assertRejected(put16(CUBIN, 62, TEXT), "that section is of type 0x1, not SHT_STRTAB");
        int names = sectionOffset(CUBIN, SHSTRTAB);
        long namesSize = sectionSize(SHSTRTAB);
        assertRejected(put8(CUBIN, (int) (names + namesSize - 1), 'x'), "section name table section 1 does not end in a NUL");
        assertRejected(put32(CUBIN, section(TEXT, SH_NAME), namesSize), "section 8's name offset 0x" + Long.toHexString(
                namesSize) + " lies outside the section name table");
    }

    @Test
    void sectionLinksNameSectionsThatExist() {
        assertRejected(put32(CUBIN, section(TEXT, SH_LINK), 99), "section 8 (.text.k) links to section 99 (sh_link), but"
                + " there are only 10 sections");
        assertRejected(put32(CUBIN, section(NV_INFO + 1, SH_INFO), 10), "section 6 (.nv.info.k) links to section 10 (sh_info)");
        byte[] noInfoLinkFlag = put64(CUBIN, section(NV_INFO + 1, SH_FLAGS), 0);
        // the driver follows .nv.info's sh_info as a section index with or without SHF_INFO_LINK
        assertRejected(put32(noInfoLinkFlag, section(NV_INFO + 1, SH_INFO), 10), "section 6 (.nv.info.k) links to section 10");
    }

    @Test
    void symbolTablesHoldElf64SymbolsNamedInTheirStringTable() {
        assertRejected(put64(CUBIN, section(SYMTAB, SH_ENTSIZE), 16), "section 3 (.symtab) holds 72 bytes in entries of"
                + " 16 bytes; ELF64 symbols are 24 bytes each");
        assertRejected(put64(CUBIN, section(SYMTAB, SH_SIZE), 70), "section 3 (.symtab) holds 70 bytes");
        assertRejected(put32(CUBIN, section(SYMTAB, SH_LINK), NOTE), "section 3 (.symtab) links (sh_link) to section 4"
                + " (.note.nv.cuinfo) of type 0x7 as its string table");
        int strings = sectionOffset(CUBIN, STRTAB);
        assertRejected(put8(CUBIN, (int) (strings + sectionSize(STRTAB) - 1), 'x'), "string table section 2 (.strtab) does"
                + " not end in a NUL");
        assertRejected(put32(CUBIN, section(SYMTAB, SH_INFO), 4), "says its global symbols start at 4 (sh_info), past its 3");
        int kernel = sectionOffset(CUBIN, SYMTAB) + 24 * CubinBuilder.KERNEL_SYMBOL;
        assertRejected(put32(CUBIN, kernel, 0x10000), "symbol 2 of section 3 (.symtab) has name offset 0x10000, outside"
                + " its string table");
        assertRejected(put16(CUBIN, kernel + 6, 77), "symbol 2 of section 3 (.symtab) is defined in section 77, but there"
                + " are only 10 sections");
        accepted(put16(CUBIN, kernel + 6, 0xfff1)); // SHN_ABS
    }

    @Test
    void relocationsPatchTheirTargetAndNameSymbolsThatExist() {
        int rela = sectionOffset(CUBIN, RELA_TEXT);
        long textSize = sectionSize(TEXT);
        assertRejected(put64(CUBIN, rela, textSize), "relocation 0 of section 7 (.rela.text.k) patches offset 0x"
                + Long.toHexString(textSize) + ", outside its target section 8 (.text.k)");
        assertRejected(put64(CUBIN, rela, -8), "patches offset 0xfffffffffffffff8");
        assertRejected(put32(CUBIN, rela + 12, 3), "relocation 0 of section 7 (.rela.text.k) refers to symbol 3, but"
                + " section 3 (.symtab) has 3");
        assertRejected(put64(CUBIN, section(RELA_TEXT, SH_ENTSIZE), 16), "relocations with addends are 24 bytes each");
        assertRejected(put32(CUBIN, section(RELA_TEXT, SH_LINK), STRTAB), "links (sh_link) to section 2 (.strtab) of type"
                + " 0x3 as its symbol table");
    }

    @Test
    void nvInfoAttributeRecordsLieInTheirSection() {
        int info = sectionOffset(CUBIN, NV_INFO);
        assertRejected(put16(CUBIN, info + 2, 200), "section 5 (.nv.info) has an attribute record (attribute 0x2f) at"
                + " offset 0x0 whose 200 bytes of data run past the section's 24 bytes");
        assertRejected(put8(CUBIN, info + 12, 9), "section 5 (.nv.info) has an attribute record of unknown format 9 at"
                + " offset 0xc");
        assertRejected(put64(CUBIN, section(NV_INFO, SH_SIZE), 14), "section 5 (.nv.info) ends inside an attribute record"
                + " header at offset 0xc");
    }

    @Test
    void notesLieInTheirSection() {
        int note = sectionOffset(CUBIN, NOTE);
        assertRejected(put32(CUBIN, note, 0x7fffffff), "section 4 (.note.nv.cuinfo) has a note at offset 0x0 whose"
                + " 2,147,483,647 bytes of name");
        assertRejected(put32(CUBIN, note + 4, 9), "section 4 (.note.nv.cuinfo) has a note at offset 0x0");
        assertRejected(put64(CUBIN, section(NOTE, SH_SIZE), 8), "ends inside the 12-byte header of the note");
    }

    /** nvcc's saxpy cubin: section 5 is .note.nv.tkinfo, 7 .nv.info, 9 .nv.info.saxpy, 18 .nv.shared.reserved.0. */
    private static final byte[] NVCC_CUBIN = Images.real("saxpy-sm90.cubin");

    private static int nvccSection(int index, int field) {
        return sectionHeader(NVCC_CUBIN, index) + field;
    }

    @Test
    void eFlagsBitZeroIsRefusedInAbiVersion8() {
        assertRejected(put32(NVCC_CUBIN, 48, 0x6005a05), "it has e_flags 0x6005a05 with bit 0 set");
        accepted(put32(NVCC_CUBIN, 48, 0x6005a0c)); // another low bit, as sm_90a's flags may carry
        byte[] abi7 = put8(NVCC_CUBIN, 8, 7);
        accepted(put32(abi7, 48, 0x3d003d)); // ABI 7 keeps an odd SM (sm_61) in the low byte
    }

    @Test
    void aSectionNamedLikeOneTheDriverParsesMustHaveThatType() {
        int nvInfoName = (int) java.nio.ByteBuffer.wrap(NVCC_CUBIN).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .getInt(nvccSection(7, SH_NAME));
        int tkinfoName = (int) java.nio.ByteBuffer.wrap(NVCC_CUBIN).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .getInt(nvccSection(5, SH_NAME));
        // .nv.info.saxpy renamed .note.nv.tkinfo: the driver would parse attribute records as a note
        assertRejected(put32(NVCC_CUBIN, nvccSection(9, SH_NAME), tkinfoName),
                "section 9 (.note.nv.tkinfo) is of type 0x70000000, but its name says 0x7");
        assertRejected(put32(NVCC_CUBIN, nvccSection(5, SH_NAME), nvInfoName),
                "section 5 (.nv.info) is of type 0x7, but its name says 0x70000000");
        assertRejected(put32(CUBIN, section(SYMTAB, SH_TYPE), 18), "section 3 (.symtab) is of type 0x12, but its name says 0x2");
    }

    @Test
    void shInfoOutsideSymbolTablesAndCodeIsASectionIndex() {
        assertRejected(put32(NVCC_CUBIN, nvccSection(7, SH_INFO), 0xffffffffL),
                "section 7 (.nv.info) links to section 4294967295 (sh_info), but there are only 21 sections");
        assertRejected(put32(NVCC_CUBIN, nvccSection(18, SH_INFO), 0x400), "section 18 (.nv.shared.reserved.0) links to"
                + " section 1024 (sh_info)");
        accepted(put32(CUBIN, section(TEXT, SH_INFO), 0x0a000000 | CubinBuilder.KERNEL_SYMBOL)); // code packs more there
    }

    @Test
    void theToolkitNotesStringOffsetsStartStringsInsideIt() {
        int strings = sectionOffset(NVCC_CUBIN, 5) + 12 + 12 + 8; // note header, "NVIDIA Corp" padded, format and a word
        for (int i = 0; i < 4; i++) {
            assertRejected(put32(NVCC_CUBIN, strings + 4 * i, 0x7fffffff), "section 5 (.note.nv.tkinfo) has a toolkit note at"
                    + " offset 0x0 whose string " + i + " starts at 0x7fffffff");
        }
        byte[] otherFormat = put32(NVCC_CUBIN, strings - 8, 3);
        accepted(put32(otherFormat, strings, 0x7fffffff)); // a format not known here is the driver's to read
    }

    private static long sectionSize(int index) {
        return java.nio.ByteBuffer.wrap(CUBIN).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(section(index, SH_SIZE));
    }
}
