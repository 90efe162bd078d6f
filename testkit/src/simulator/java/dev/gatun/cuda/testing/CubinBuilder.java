package dev.gatun.cuda.testing;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Builds a small but well-formed CUBIN byte by byte: an ELF64 file for EM_CUDA laid out as
 * nvcc lays one out, with the tables and sections the driver walks. Its code section, first
 * in the file right after the 64-byte ELF header, holds PTX-like text ending in a NUL, which
 * the simulated driver reads as the module's contents.
 *
 * <pre>
 * ELF header | .text.K | .shstrtab | .strtab | .symtab | .note.nv.cuinfo | .nv.info | .nv.info.K
 *            | .rela.text.K | section header table | program header table (last: any cut loses it)
 * </pre>
 */
public final class CubinBuilder {

    /** Section indices. */
    public static final int SHSTRTAB = 1;
    public static final int STRTAB = 2;
    public static final int SYMTAB = 3;
    public static final int NOTE = 4;
    public static final int NV_INFO = 5;
    public static final int NV_INFO_KERNEL = 6;
    public static final int RELA_TEXT = 7;
    public static final int TEXT = 8;
    public static final int SHARED = 9;
    public static final int SECTIONS = 10;
    /** Program headers: PT_PHDR, PT_LOAD of the code, PT_LOAD of shared memory (no file bytes). */
    public static final int PROGRAM_HEADERS = 3;
    /** The symbol of the kernel in {@code .symtab}. */
    public static final int KERNEL_SYMBOL = 2;
    /** The size of {@code .nv.shared.K}, an SHT_NOBITS section larger than the whole file. */
    public static final int SHARED_BYTES = 0x10000;
    /** Where the code section starts: what the simulated driver reads. */
    public static final int TEXT_OFFSET = 64;

    private CubinBuilder() {
    }

    /** A cubin with one kernel named {@code kernel} whose code section holds {@code text} and a NUL. */
    public static byte[] cubin(String kernel, String text) {
        byte[] code = (text + "\0").getBytes(StandardCharsets.UTF_8);
        String[] sectionNames = {"", ".shstrtab", ".strtab", ".symtab", ".note.nv.cuinfo", ".nv.info", ".nv.info." + kernel,
            ".rela.text." + kernel, ".text." + kernel, ".nv.shared." + kernel};
        Strings shstrtab = new Strings();
        int[] nameOffsets = new int[SECTIONS];
        for (int i = 0; i < SECTIONS; i++) {
            nameOffsets[i] = shstrtab.add(sectionNames[i]);
        }
        Strings strtab = new Strings();
        int kernelName = strtab.add(kernel);
        int textName = strtab.add(".text." + kernel);

        Out symtab = new Out();
        symtab.symbol(0, 0, 0, 0, 0); // the null symbol
        symtab.symbol(textName, 0x03, TEXT, 0, 0); // STT_SECTION, local
        symtab.symbol(kernelName, 0x12, TEXT, 0, code.length); // STT_FUNC, global

        Out note = new Out();
        byte[] owner = "NVIDIA Corp\0".getBytes(StandardCharsets.US_ASCII);
        note.u32(owner.length).u32(8).u32(1000).bytes(owner).u32(2).u32(90);

        Out info = new Out(); // EIATTR records: format, attribute, 16-bit size or value, sized data
        info.u8(4).u8(0x2f).u16(8).u32(KERNEL_SYMBOL).u32(16); // EIFMT_SVAL register count
        info.u8(4).u8(0x11).u16(8).u32(KERNEL_SYMBOL).u32(0); // EIFMT_SVAL frame size
        Out kernelInfo = new Out();
        kernelInfo.u8(3).u8(0x1b).u16(255); // EIFMT_HVAL
        kernelInfo.u8(1).u8(0x0a).u16(0); // EIFMT_NVAL
        kernelInfo.u8(4).u8(0x17).u16(12).u32(0).u32(0).u32(0x00200000); // EIFMT_SVAL parameter info

        Out rela = new Out();
        rela.u64(16).u64(((long) KERNEL_SYMBOL << 32) | 2).u64(0); // r_offset, r_info (symbol, type), r_addend

        Out file = new Out();
        file.zeros(64); // the ELF header, written last
        long[][] place = new long[SECTIONS][];
        place[TEXT] = file.place(code, 8);
        place[SHSTRTAB] = file.place(shstrtab.bytes(), 1);
        place[STRTAB] = file.place(strtab.bytes(), 1);
        place[SYMTAB] = file.place(symtab.toArray(), 8);
        place[NOTE] = file.place(note.toArray(), 4);
        place[NV_INFO] = file.place(info.toArray(), 4);
        place[NV_INFO_KERNEL] = file.place(kernelInfo.toArray(), 4);
        place[RELA_TEXT] = file.place(rela.toArray(), 8);
        place[SHARED] = new long[] {file.size(), SHARED_BYTES};
        place[0] = new long[] {0, 0};
        file.align(8);

        long shoff = file.size();
        //               type        flags link    info          align entsize
        long[][] headers = {
            {0, 0, 0, 0, 0, 0},
            {3, 0, 0, 0, 1, 0},
            {3, 0, 0, 0, 1, 0},
            {2, 0, STRTAB, KERNEL_SYMBOL, 8, 24},
            {7, 0, 0, 0, 4, 0},
            {0x70000000L, 0, SYMTAB, 0, 4, 0},
            {0x70000000L, 0x40, SYMTAB, TEXT, 4, 0},
            {4, 0x40, SYMTAB, TEXT, 8, 24},
            {1, 0x6, SYMTAB, KERNEL_SYMBOL, 8, 0},
            {8, 0x43, 0, TEXT, 16, 0},
        };
        for (int i = 0; i < SECTIONS; i++) {
            long[] h = headers[i];
            file.u32(nameOffsets[i]).u32(h[0]).u64(h[1]).u64(0).u64(place[i][0]).u64(place[i][1]).u32(h[2]).u32(h[3])
                    .u64(h[4]).u64(h[5]);
        }
        long phoff = file.size();
        long phdrBytes = PROGRAM_HEADERS * 56L;
        file.programHeader(6, 4, phoff, phdrBytes, phdrBytes); // PT_PHDR
        file.programHeader(1, 5, place[TEXT][0], place[TEXT][1], place[TEXT][1]); // PT_LOAD, R E
        file.programHeader(1, 6, place[SHARED][0], 0, SHARED_BYTES); // PT_LOAD, RW, no file bytes

        byte[] image = file.toArray();
        ByteBuffer header = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
        header.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, 8});
        header.putShort(16, (short) 2); // ET_EXEC
        header.putShort(18, (short) 190); // EM_CUDA
        header.putInt(20, 1);
        header.putLong(32, phoff);
        header.putLong(40, shoff);
        header.putInt(48, 0x06005a04); // sm_90, as nvcc writes it
        header.putShort(52, (short) 64);
        header.putShort(54, (short) 56);
        header.putShort(56, (short) PROGRAM_HEADERS);
        header.putShort(58, (short) 64);
        header.putShort(60, (short) SECTIONS);
        header.putShort(62, (short) SHSTRTAB);
        return image;
    }

    /** Where section {@code index}'s header starts in {@code cubin}. */
    public static int sectionHeader(byte[] cubin, int index) {
        return (int) ByteBuffer.wrap(cubin).order(ByteOrder.LITTLE_ENDIAN).getLong(40) + 64 * index;
    }

    /** Where program header {@code index} starts in {@code cubin}. */
    public static int programHeader(byte[] cubin, int index) {
        return (int) ByteBuffer.wrap(cubin).order(ByteOrder.LITTLE_ENDIAN).getLong(32) + 56 * index;
    }

    /** Where section {@code index}'s bytes start in {@code cubin}. */
    public static int sectionOffset(byte[] cubin, int index) {
        return (int) ByteBuffer.wrap(cubin).order(ByteOrder.LITTLE_ENDIAN).getLong(sectionHeader(cubin, index) + 24);
    }

    /** A string table: NUL-separated, starting with the empty string. */
    private static final class Strings {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        int add(String s) {
            int at = bytes.size();
            bytes.writeBytes((s + "\0").getBytes(StandardCharsets.US_ASCII));
            return at;
        }

        byte[] bytes() {
            return bytes.toByteArray();
        }
    }

    /** A little-endian byte sink. */
    private static final class Out {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        Out u8(int v) {
            bytes.write(v);
            return this;
        }

        Out u16(int v) {
            return u8(v).u8(v >>> 8);
        }

        Out u32(long v) {
            return u16((int) v).u16((int) (v >>> 16));
        }

        Out u64(long v) {
            return u32(v).u32(v >>> 32);
        }

        Out bytes(byte[] b) {
            bytes.writeBytes(b);
            return this;
        }

        Out zeros(int n) {
            return bytes(new byte[n]);
        }

        Out align(int alignment) {
            return zeros((alignment - size() % alignment) % alignment);
        }

        Out symbol(int name, int info, int section, long value, long size) {
            return u32(name).u8(info).u8(0).u16(section).u64(value).u64(size);
        }

        Out programHeader(int type, int flags, long offset, long fileSize, long memorySize) {
            return u32(type).u32(flags).u64(offset).u64(0).u64(0).u64(fileSize).u64(memorySize).u64(8);
        }

        /** Appends {@code b} aligned, returning its {offset, size}. */
        long[] place(byte[] b, int alignment) {
            align(alignment);
            long at = size();
            bytes(b);
            return new long[] {at, b.length};
        }

        int size() {
            return bytes.size();
        }

        byte[] toArray() {
            return bytes.toByteArray();
        }
    }
}
