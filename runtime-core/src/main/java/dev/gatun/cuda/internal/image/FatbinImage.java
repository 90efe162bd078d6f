package dev.gatun.cuda.internal.image;

import static dev.gatun.cuda.internal.image.ImageBytes.bytes;
import static dev.gatun.cuda.internal.image.ImageBytes.fits;
import static dev.gatun.cuda.internal.image.ImageBytes.hex;

import java.lang.foreign.MemorySegment;

/**
 * Checks a fatbin, NVIDIA's container of images for several architectures, before the driver
 * walks it. The layout, little-endian:
 *
 * <pre>
 * header (16 bytes): u32 magic 0xBA55ED50, u16 version 1, u16 header size, u64 fat size
 *                    (the bytes of entries after the header)
 * entries, back to back until header size + fat size:
 *   u16 kind (1 PTX, 2 ELF), u16 version, u32 entry header size (64 or more),
 *   u64 payload size (padded), u32 compressed size, u32, u16 u16 code version, u32 SM arch,
 *   u32 u32 name offset and length, u64 flags (0x2000 or 0x8000: payload compressed),
 *   u64, u64 uncompressed size, then the rest of the entry header, then the payload.
 * </pre>
 *
 * Checked: the header and every entry header and payload lie within the image, an
 * uncompressed ELF entry is a sound cubin ({@link ElfImage}), an uncompressed PTX entry is PTX
 * text ending in a NUL inside its payload ({@link PtxImage}); a compressed entry's data lies
 * within its payload (its contents are the driver's to decompress).
 */
public final class FatbinImage {

    private static final long MAGIC = 0xba55ed50L;
    private static final int HEADER_SIZE = 16;
    private static final int ENTRY_HEADER_SIZE = 64;
    private static final int KIND_PTX = 1;
    private static final int KIND_ELF = 2;
    /** Flag bits that mark a compressed payload: LZ4 in older toolkits, Zstandard in newer ones. */
    private static final long COMPRESSED = 0x2000L | 0x8000L;

    private FatbinImage() {
    }

    public static void check(MemorySegment image) throws ImageFormatException {
        ImageBytes fatbin = new ImageBytes(image);
        long size = fatbin.size();
        if (size < HEADER_SIZE) {
            throw new ImageFormatException("it is " + bytes(size) + ", shorter than the 16-byte fatbin header");
        }
        if (fatbin.u32(0) != MAGIC) {
            throw new ImageFormatException("it does not start with the fatbin magic 50 ed 55 ba (it starts " + fatbin.head(4) + ")");
        }
        int version = fatbin.u16(4);
        if (version != 1) {
            throw new ImageFormatException("it is fatbin version " + version + "; version 1 is the one this layout describes");
        }
        int headerSize = fatbin.u16(6);
        long fatSize = fatbin.u64(8);
        if (headerSize < HEADER_SIZE || !fits(headerSize, fatSize, size)) {
            throw new ImageFormatException("its header (" + bytes(headerSize) + ") and entries (fat size " + bytes(fatSize)
                    + ") end past the image's " + bytes(size) + (headerSize < HEADER_SIZE ? ", or the header is shorter than 16 bytes" : ""));
        }
        long end = headerSize + fatSize;
        int index = 0;
        for (long at = headerSize; at < end; index++) {
            at = checkEntry(fatbin, index, at, end);
        }
    }

    /** Checks the entry at {@code at} and returns where the next one starts. */
    private static long checkEntry(ImageBytes fatbin, int index, long at, long end) throws ImageFormatException {
        if (end - at < ENTRY_HEADER_SIZE) {
            throw new ImageFormatException("it ends " + bytes(end - at) + " after the start of entry " + index + " (offset "
                    + hex(at) + "), inside its 64-byte entry header");
        }
        int kind = fatbin.u16(at);
        long entryHeader = fatbin.u32(at + 4);
        long payloadSize = fatbin.u64(at + 8);
        long compressedSize = fatbin.u32(at + 16);
        long arch = fatbin.u32(at + 28);
        long flags = fatbin.u64(at + 40);
        String entry = "entry " + index + " (" + kindName(kind) + " for sm_" + arch + ", at offset " + hex(at) + ")";
        if (entryHeader < ENTRY_HEADER_SIZE || entryHeader > end - at) {
            throw new ImageFormatException(entry + " has an entry header of " + bytes(entryHeader) + "; an entry header is"
                    + " at least 64 bytes and lies within the fatbin's " + bytes(end));
        }
        long payload = at + entryHeader;
        if (!fits(payload, payloadSize, end)) {
            throw new ImageFormatException(entry + " has a payload [offset " + hex(payload) + ", " + bytes(payloadSize)
                    + "] that ends past the fatbin's " + bytes(end));
        }
        ImageBytes data = fatbin.slice(payload, payloadSize);
        if ((flags & COMPRESSED) != 0) {
            if (compressedSize > payloadSize) {
                throw new ImageFormatException(entry + " claims " + bytes(compressedSize) + " of compressed data in a payload"
                        + " of " + bytes(payloadSize));
            }
        } else if (kind == KIND_ELF) {
            try {
                ElfImage.check(data, "the entry");
            } catch (ImageFormatException e) {
                throw new ImageFormatException(entry + " holds a malformed ELF: " + e.getMessage());
            }
        } else if (kind == KIND_PTX) {
            if (data.indexOfNul(0, payloadSize) < 0) {
                throw new ImageFormatException(entry + " has no NUL in its payload of " + bytes(payloadSize)
                        + "; the driver would read the PTX text past it");
            }
            try {
                PtxImage.check(data);
            } catch (ImageFormatException e) {
                throw new ImageFormatException(entry + " holds malformed PTX: " + e.getMessage());
            }
        }
        return payload + payloadSize;
    }

    private static String kindName(int kind) {
        return switch (kind) {
            case KIND_PTX -> "PTX";
            case KIND_ELF -> "ELF";
            default -> "kind " + kind;
        };
    }
}
