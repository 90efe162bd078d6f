package dev.gatun.cuda.internal.image;

import static dev.gatun.cuda.internal.image.ImageBytes.bytes;
import static dev.gatun.cuda.internal.image.ImageBytes.fits;
import static dev.gatun.cuda.internal.image.ImageBytes.hex;

import java.lang.foreign.MemorySegment;

/**
 * Checks a CUBIN (an ELF64 file for EM_CUDA) before the driver walks it. The driver takes no
 * length: it follows the offsets, counts and indices inside the image, so each one must stay
 * within it. Checked here, each cheap and required of every valid cubin:
 *
 * <ul>
 *   <li>the identification (magic, ELFCLASS64, little-endian, version 1), EM_CUDA, and the
 *       64-byte ELF64 header size;
 *   <li>the program and section header tables, with ELF64's entry sizes, lie within the image;
 *   <li>every program header's file bytes, and every section's bytes unless it holds none
 *       (SHT_NOBITS and CUDA's own no-data types), lie within the image; alignments are 0 or
 *       a power of two;
 *   <li>e_shstrndx names a string table that ends in a NUL, and every section name lies in it;
 *   <li>every sh_link, and sh_info where the section flags it as one (SHF_INFO_LINK), names a
 *       section that exists;
 *   <li>notes (SHT_NOTE, such as the toolkit's {@code .note.nv.*}): each note's header, name
 *       and description lie within its section;
 *   <li>symbol tables: ELF64 entries, names within their NUL-terminated string table, section
 *       indices that exist;
 *   <li>relocation tables: ELF64 entries, a symbol table and a target section that exist, each
 *       relocation inside its target and naming a symbol that exists;
 *   <li>{@code .nv.info} sections (SHT_CUDA_INFO): each attribute record lies within its section.
 * </ul>
 *
 * <p>Beyond plain ELF, four rules come from loading about 22,000 mutated cubins and fatbins
 * one by one into driver 580 on an H200, each in a process of its own: every mutation that
 * passed the checks above and still crashed the driver (115 of them) broke one of these, and
 * no image that nvcc or NVRTC writes does:
 *
 * <ul>
 *   <li>a section's name says what the driver takes it for ({@code .nv.info*}, {@code .note*},
 *       {@code .symtab}, {@code .strtab}, {@code .rela*}, {@code .rel*}), so its type must agree:
 *       the driver finds such sections by name and then parses them as that kind;
 *   <li>sh_info of a section that is neither a symbol table nor code is 0 or a section index
 *       (the driver follows it as one for {@code .nv.info}, {@code .nv.shared.*} and others);
 *   <li>the toolkit note ({@code .note.nv.tkinfo}: owner "NVIDIA Corp", type 2000) holds, in its
 *       format 2, four offsets into the strings after them, each starting a NUL-terminated
 *       string within the note;
 *   <li>in CUDA's ELF ABI version 8, e_flags bit 0 is clear.
 * </ul>
 */
public final class ElfImage {

    static final int EM_CUDA = 190;
    private static final long ELF_MAGIC = 0x464c457fL; // 7f 'E' 'L' 'F', little-endian
    private static final int EHDR_SIZE = 64;
    private static final int PHDR_SIZE = 56;
    private static final int SHDR_SIZE = 64;
    private static final int SYM_SIZE = 24;
    private static final int REL_SIZE = 16;
    private static final int RELA_SIZE = 24;
    private static final int PN_XNUM = 0xffff;
    private static final int SHN_LORESERVE = 0xff00;
    private static final long PT_LOAD = 1;
    private static final long SHT_SYMTAB = 2;
    private static final long SHT_STRTAB = 3;
    private static final long SHT_RELA = 4;
    private static final long SHT_NOTE = 7;
    private static final long SHT_NOBITS = 8;
    private static final long SHT_REL = 9;
    private static final long SHT_DYNSYM = 11;
    private static final long SHF_INFO_LINK = 0x40;
    /** SHT_CUDA_INFO: the {@code .nv.info} attribute records. */
    private static final long SHT_CUDA_INFO = 0x70000000L;
    /** CUDA's memory-space sections that, like SHT_NOBITS, occupy no bytes in the file. */
    private static final long SHT_CUDA_GLOBAL = 0x70000007L;
    private static final long SHT_CUDA_LOCAL = 0x70000009L;
    private static final long SHT_CUDA_SHARED = 0x7000000aL;
    private static final long SHT_CUDA_SHARED_RESERVED = 0x70000015L;
    /** EI_ABIVERSION of the cubins that current toolkits write, whose e_flags carry the SM in bits 8 to 15. */
    private static final int CUDA_ABI_V8 = 8;
    private static final String NVIDIA_NOTE_OWNER = "NVIDIA Corp";
    /** The note type of {@code .note.nv.tkinfo}: which toolkit, version and options made the cubin. */
    private static final long NOTE_TOOLKIT_INFO = 2000;
    /** Format 2 of that note's description: u32 format, u32, then four u32 string offsets, then the strings. */
    private static final long TOOLKIT_INFO_FORMAT = 2;
    private static final int TOOLKIT_INFO_OFFSETS = 4;
    private static final int TOOLKIT_INFO_STRINGS = 24;
    private static final long SHF_EXECINSTR = 0x4;
    /** The record formats of {@code .nv.info}: no value, a byte, a half-word (all in the 4-byte header), sized data after it. */
    private static final int EIFMT_NVAL = 1;
    private static final int EIFMT_SVAL = 4;

    private final ImageBytes elf;
    private final String container;
    private Section[] sections;
    private Section names;
    /** Set once the section name table is known to lie in the file and end in a NUL: names can then be read. */
    private boolean namesReadable;

    private ElfImage(ImageBytes elf, String container) {
        this.elf = elf;
        this.container = container;
    }

    /** Checks a whole image. */
    public static void check(MemorySegment image) throws ImageFormatException {
        check(new ImageBytes(image), "the image");
    }

    /** Checks an ELF held in {@code container} (e.g. "the entry"), named in messages. */
    static void check(ImageBytes elf, String container) throws ImageFormatException {
        new ElfImage(elf, container).check();
    }

    private record Section(int index, long name, long type, long flags, long offset, long size, long link, long info,
            long alignment, long entsize) {

        boolean hasFileBytes() {
            return type != SHT_NOBITS && type != SHT_CUDA_GLOBAL && type != SHT_CUDA_LOCAL && type != SHT_CUDA_SHARED
                    && type != SHT_CUDA_SHARED_RESERVED;
        }

        boolean isSymbolTable() {
            return type == SHT_SYMTAB || type == SHT_DYNSYM;
        }
    }

    private void check() throws ImageFormatException {
        long size = elf.size();
        if (size < EHDR_SIZE) {
            throw new ImageFormatException("it is " + bytes(size) + ", shorter than the 64-byte ELF64 header");
        }
        if (elf.u32(0) != ELF_MAGIC) {
            throw new ImageFormatException("it does not start with the ELF magic 7f 45 4c 46 (it starts " + elf.head(4) + ")");
        }
        int elfClass = elf.u8(4);
        if (elfClass != 2) {
            throw new ImageFormatException("it is ELF class " + elfClass + ", not ELFCLASS64 (2); a cubin is a 64-bit ELF");
        }
        int data = elf.u8(5);
        if (data != 1) {
            throw new ImageFormatException("it has ELF data encoding " + data + ", not little-endian (1)");
        }
        int version = elf.u8(6);
        if (version != 1) {
            throw new ImageFormatException("it has ELF identification version " + version + "; the only ELF version is 1");
        }
        int machine = elf.u16(18);
        if (machine != EM_CUDA) {
            throw new ImageFormatException("it is an ELF for machine " + machine + ", not EM_CUDA (190): it is no CUDA cubin");
        }
        long flags = elf.u32(48);
        if (elf.u8(8) == CUDA_ABI_V8 && (flags & 1) != 0) {
            throw new ImageFormatException("it has e_flags " + hex(flags) + " with bit 0 set, which no CUDA toolkit writes"
                    + " in an ABI version 8 cubin (driver 580 crashes on it)");
        }
        int headerSize = elf.u16(52);
        if (headerSize != EHDR_SIZE) {
            throw new ImageFormatException("it gives its ELF header size (e_ehsize) as " + bytes(headerSize)
                    + "; an ELF64 header is 64 bytes");
        }
        checkProgramHeaders();
        readSectionHeaders();
        checkSectionNames();
        for (Section s : sections) {
            checkSection(s);
        }
        for (Section s : sections) {
            if (s.isSymbolTable()) {
                checkSymbols(s);
            }
        }
        for (Section s : sections) {
            if (s.type == SHT_REL || s.type == SHT_RELA) {
                checkRelocations(s);
            }
            if (s.type == SHT_CUDA_INFO) {
                checkAttributes(s);
            }
        }
    }

    private void checkProgramHeaders() throws ImageFormatException {
        long offset = elf.u64(32);
        int entrySize = elf.u16(54);
        int count = elf.u16(56);
        if (count == 0) {
            return;
        }
        if (count == PN_XNUM) {
            throw new ImageFormatException("it uses extended program header numbering (e_phnum 0xffff), which no cubin needs");
        }
        if (entrySize != PHDR_SIZE) {
            throw new ImageFormatException("it has program header entries of " + bytes(entrySize)
                    + " (e_phentsize); an ELF64 program header is 56 bytes");
        }
        table("program header table", offset, count, entrySize);
        for (int i = 0; i < count; i++) {
            long at = offset + (long) i * entrySize;
            long type = elf.u32(at);
            long fileOffset = elf.u64(at + 8);
            long fileSize = elf.u64(at + 32);
            long memorySize = elf.u64(at + 40);
            long alignment = elf.u64(at + 48);
            if (!fits(fileOffset, fileSize, elf.size())) {
                throw new ImageFormatException("program header " + i + " (type " + hex(type) + ") [offset " + hex(fileOffset)
                        + ", " + bytes(fileSize) + "] ends past " + container + "'s " + bytes(elf.size()));
            }
            if (!isAlignment(alignment)) {
                throw new ImageFormatException("program header " + i + " (type " + hex(type) + ") has alignment "
                        + hex(alignment) + ", which is neither 0 nor a power of two");
            }
            if (type == PT_LOAD && Long.compareUnsigned(fileSize, memorySize) > 0) {
                throw new ImageFormatException("program header " + i + " (PT_LOAD) has more bytes in the file ("
                        + bytes(fileSize) + ") than in memory (" + bytes(memorySize) + ")");
            }
        }
    }

    private void readSectionHeaders() throws ImageFormatException {
        long offset = elf.u64(40);
        int entrySize = elf.u16(58);
        int count = elf.u16(60);
        int namesIndex = elf.u16(62);
        if (count == 0) {
            throw new ImageFormatException("it has no section headers (e_shnum 0); a cubin keeps its code and metadata in"
                    + " sections, and extended section numbering is not supported");
        }
        if (count >= SHN_LORESERVE) {
            throw new ImageFormatException("it claims " + count + " sections (e_shnum); ELF reserves counts from 0xff00 up");
        }
        if (entrySize != SHDR_SIZE) {
            throw new ImageFormatException("it has section header entries of " + bytes(entrySize)
                    + " (e_shentsize); an ELF64 section header is 64 bytes");
        }
        table("section header table", offset, count, entrySize);
        sections = new Section[count];
        for (int i = 0; i < count; i++) {
            long at = offset + (long) i * entrySize;
            sections[i] = new Section(i, elf.u32(at), elf.u32(at + 4), elf.u64(at + 8), elf.u64(at + 24), elf.u64(at + 32),
                    elf.u32(at + 40), elf.u32(at + 44), elf.u64(at + 48), elf.u64(at + 56));
        }
        if (namesIndex == 0 || namesIndex >= count) {
            throw new ImageFormatException("it names section " + namesIndex + " (e_shstrndx) as its section name table, but"
                    + " it has sections 1 to " + (count - 1));
        }
        names = sections[namesIndex];
    }

    /** A table of {@code count} entries of {@code entrySize} bytes at {@code offset} lies within the ELF. */
    private void table(String what, long offset, int count, int entrySize) throws ImageFormatException {
        if (!fits(offset, (long) count * entrySize, elf.size())) {
            throw new ImageFormatException(what + " [offset " + hex(offset) + ", " + count + " entries of " + entrySize
                    + " bytes] ends past " + container + "'s " + bytes(elf.size()));
        }
    }

    private void checkSectionNames() throws ImageFormatException {
        if (names.type != SHT_STRTAB) {
            throw new ImageFormatException("it names section " + names.index + " (e_shstrndx) as its section name table, but"
                    + " that section is of type " + hex(names.type) + ", not SHT_STRTAB");
        }
        checkStringTable(names, "section name table");
        namesReadable = true;
        for (Section s : sections) {
            if (Long.compareUnsigned(s.name, names.size) >= 0) {
                throw new ImageFormatException("section " + s.index + "'s name offset " + hex(s.name)
                        + " lies outside the section name table (" + bytes(names.size) + ")");
            }
        }
        for (Section s : sections) {
            checkNameMatchesType(s);
        }
    }

    /**
     * The section names by which the driver finds a section, and the type it then parses it as:
     * a name ending in '*' here is a prefix ({@code .rela} comes before {@code .rel}), any
     * other an exact name ({@code .symtab_shndx} is no symbol table).
     */
    private static final String[] NAMES = {".nv.info", ".nv.info.*", ".note.*", ".symtab", ".strtab", ".shstrtab", ".rela.*",
        ".rel.*"};
    private static final long[] NAME_TYPES = {SHT_CUDA_INFO, SHT_CUDA_INFO, SHT_NOTE, SHT_SYMTAB, SHT_STRTAB, SHT_STRTAB,
        SHT_RELA, SHT_REL};

    private void checkNameMatchesType(Section s) throws ImageFormatException {
        String name = name(s);
        for (int i = 0; i < NAMES.length; i++) {
            String pattern = NAMES[i];
            boolean prefix = pattern.endsWith("*");
            if (prefix ? name.startsWith(pattern.substring(0, pattern.length() - 1)) : name.equals(pattern)) {
                if (s.type != NAME_TYPES[i]) {
                    throw new ImageFormatException(label(s) + " is of type " + hex(s.type) + ", but its name says "
                            + hex(NAME_TYPES[i]) + ": the driver finds such sections by name and parses them as that type");
                }
                return;
            }
        }
    }

    /** A string table in the file that ends in a NUL, so every offset in it starts a terminated string. */
    private void checkStringTable(Section table, String what) throws ImageFormatException {
        checkBytesInFile(table);
        if (table.size == 0 || elf.u8(table.offset + table.size - 1) != 0) {
            throw new ImageFormatException(what + " " + label(table) + " does not end in a NUL"
                    + (table.size == 0 ? " (it is empty)" : "") + "; its last string would run past it");
        }
    }

    private void checkSection(Section s) throws ImageFormatException {
        if (s.hasFileBytes()) {
            checkBytesInFile(s);
        }
        if (!isAlignment(s.alignment)) {
            throw new ImageFormatException(label(s) + " has alignment " + hex(s.alignment)
                    + " (sh_addralign), which is neither 0 nor a power of two");
        }
        sectionIndex(s, s.link, "sh_link");
        // sh_info is a symbol index in a symbol table (checked there) and in code, where the toolkit
        // packs more into it; everywhere else it is 0 or a section index.
        if ((s.flags & SHF_INFO_LINK) != 0 || !(s.isSymbolTable() || (s.flags & SHF_EXECINSTR) != 0)) {
            sectionIndex(s, s.info, "sh_info");
        }
        if (s.type == SHT_NOTE) {
            checkNotes(s);
        }
    }

    /** Each note: namesz, descsz and type (4 bytes each), then the name and the description, each padded to 4 bytes. */
    private void checkNotes(Section notes) throws ImageFormatException {
        long end = notes.offset + notes.size;
        for (long at = notes.offset; at < end; ) {
            if (end - at < 12) {
                throw new ImageFormatException(label(notes) + " ends inside the 12-byte header of the note at offset "
                        + hex(at - notes.offset) + " of the section");
            }
            long nameSize = elf.u32(at);
            long descriptionSize = elf.u32(at + 4);
            long name = at + 12;
            long description = name + align4(nameSize);
            if (!fits(name, nameSize, end) || !fits(description, descriptionSize, end)) {
                throw new ImageFormatException(label(notes) + " has a note at offset " + hex(at - notes.offset) + " whose "
                        + bytes(nameSize) + " of name and " + bytes(descriptionSize) + " of description run past the"
                        + " section's " + bytes(notes.size));
            }
            if (descriptionSize > 0 && elf.u32(at + 8) == NOTE_TOOLKIT_INFO && isNvidiaOwner(name, nameSize)) {
                checkToolkitInfo(notes, at - notes.offset, description, descriptionSize);
            }
            at = description + align4(descriptionSize);
        }
    }

    private boolean isNvidiaOwner(long name, long nameSize) {
        return nameSize == NVIDIA_NOTE_OWNER.length() + 1 && elf.latin1(name, name + nameSize - 1).equals(NVIDIA_NOTE_OWNER);
    }

    /** Each of the four string offsets of a format-2 toolkit note starts a NUL-terminated string inside the note. */
    private void checkToolkitInfo(Section notes, long noteAt, long description, long size) throws ImageFormatException {
        if (size < TOOLKIT_INFO_STRINGS || elf.u32(description) != TOOLKIT_INFO_FORMAT) {
            return; // another format: its layout is not known here, so it is the driver's to read
        }
        long strings = description + TOOLKIT_INFO_STRINGS;
        long end = description + size;
        for (int i = 0; i < TOOLKIT_INFO_OFFSETS; i++) {
            long offset = elf.u32(description + 8 + 4L * i);
            if (offset >= end - strings || elf.indexOfNul(strings + offset, end) < 0) {
                throw new ImageFormatException(label(notes) + " has a toolkit note at offset " + hex(noteAt) + " whose string "
                        + i + " starts at " + hex(offset) + " of its " + bytes(end - strings)
                        + " of strings without a NUL after it there");
            }
        }
    }

    private static long align4(long n) {
        return (n + 3) & ~3L;
    }

    /** ELF alignments: 0 and 1 mean none, else a power of two. */
    private static boolean isAlignment(long alignment) {
        return (alignment & (alignment - 1)) == 0;
    }

    private void checkBytesInFile(Section s) throws ImageFormatException {
        if (!fits(s.offset, s.size, elf.size())) {
            throw new ImageFormatException(label(s) + " [offset " + hex(s.offset) + ", " + bytes(s.size) + "] ends past "
                    + container + "'s " + bytes(elf.size()));
        }
    }

    private Section sectionIndex(Section s, long index, String field) throws ImageFormatException {
        if (index >= sections.length) {
            throw new ImageFormatException(label(s) + " links to section " + index + " (" + field + "), but there are only "
                    + sections.length + " sections");
        }
        return sections[(int) index];
    }

    private Section linkedTable(Section s, String what, long... types) throws ImageFormatException {
        Section linked = sectionIndex(s, s.link, "sh_link");
        for (long type : types) {
            if (linked.type == type) {
                return linked;
            }
        }
        throw new ImageFormatException(label(s) + " links (sh_link) to " + label(linked) + " of type " + hex(linked.type)
                + " as its " + what);
    }

    private long entries(Section s, int entrySize, String what) throws ImageFormatException {
        if (s.entsize != entrySize || Long.remainderUnsigned(s.size, entrySize) != 0) {
            throw new ImageFormatException(label(s) + " holds " + bytes(s.size) + " in entries of " + bytes(s.entsize)
                    + "; ELF64 " + what + " are " + entrySize + " bytes each");
        }
        return s.size / entrySize;
    }

    private void checkSymbols(Section table) throws ImageFormatException {
        long count = entries(table, SYM_SIZE, "symbols");
        Section strings = linkedTable(table, "string table", SHT_STRTAB);
        checkStringTable(strings, "string table");
        if (table.info > count) {
            throw new ImageFormatException(label(table) + " says its global symbols start at " + table.info
                    + " (sh_info), past its " + count + " symbols");
        }
        for (long i = 0; i < count; i++) {
            long at = table.offset + i * SYM_SIZE;
            long name = elf.u32(at);
            int section = elf.u16(at + 6);
            if (name >= strings.size) {
                throw new ImageFormatException("symbol " + i + " of " + label(table) + " has name offset " + hex(name)
                        + ", outside its string table (" + bytes(strings.size) + ")");
            }
            if (section >= sections.length && section < SHN_LORESERVE) {
                throw new ImageFormatException("symbol " + i + " of " + label(table) + " is defined in section " + section
                        + ", but there are only " + sections.length + " sections");
            }
        }
    }

    private void checkRelocations(Section table) throws ImageFormatException {
        boolean addends = table.type == SHT_RELA;
        int entrySize = addends ? RELA_SIZE : REL_SIZE;
        long count = entries(table, entrySize, addends ? "relocations with addends" : "relocations");
        Section symbols = linkedTable(table, "symbol table", SHT_SYMTAB, SHT_DYNSYM);
        long symbolCount = symbols.size / SYM_SIZE;
        Section target = sectionIndex(table, table.info, "sh_info");
        for (long i = 0; i < count; i++) {
            long at = table.offset + i * entrySize;
            long offset = elf.u64(at);
            long symbol = elf.u64(at + 8) >>> 32;
            if (Long.compareUnsigned(offset, target.size) >= 0) {
                throw new ImageFormatException("relocation " + i + " of " + label(table) + " patches offset " + hex(offset)
                        + ", outside its target " + label(target) + " (" + bytes(target.size) + ")");
            }
            if (symbol >= symbolCount) {
                throw new ImageFormatException("relocation " + i + " of " + label(table) + " refers to symbol " + symbol
                        + ", but " + label(symbols) + " has " + symbolCount);
            }
        }
    }

    /** Walks the attribute records: a 4-byte header (format, attribute, 16-bit value or size), sized data after it. */
    private void checkAttributes(Section info) throws ImageFormatException {
        long end = info.offset + info.size;
        for (long at = info.offset; at < end; ) {
            if (end - at < 4) {
                throw new ImageFormatException(label(info) + " ends inside an attribute record header at offset "
                        + hex(at - info.offset) + " of the section");
            }
            int format = elf.u8(at);
            if (format < EIFMT_NVAL || format > EIFMT_SVAL) {
                throw new ImageFormatException(label(info) + " has an attribute record of unknown format " + format
                        + " at offset " + hex(at - info.offset) + " of the section");
            }
            long data = format == EIFMT_SVAL ? elf.u16(at + 2) : 0;
            if (data > end - at - 4) {
                throw new ImageFormatException(label(info) + " has an attribute record (attribute " + hex(elf.u8(at + 1))
                        + ") at offset " + hex(at - info.offset) + " whose " + bytes(data) + " of data run past the section's "
                        + bytes(info.size));
            }
            at += 4 + data;
        }
    }

    /** The section's name; only once the section name table is known sound and the name offset lies in it. */
    private String name(Section s) {
        long from = names.offset + s.name;
        return elf.latin1(from, elf.indexOfNul(from, names.offset + names.size));
    }

    /** "section 7 (.nv.info)" once names can be read and this one lies in the table, else "section 7". */
    private String label(Section s) {
        if (!namesReadable || Long.compareUnsigned(s.name, names.size) >= 0) {
            return "section " + s.index;
        }
        return "section " + s.index + " (" + name(s) + ")";
    }
}
