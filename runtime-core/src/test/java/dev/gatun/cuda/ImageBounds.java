package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.Supplier;

/**
 * An independent reading of an image that was accepted: every table, section and entry that
 * the driver follows lies within the bytes. Written apart from the checks it verifies, and
 * only as far as bounds go.
 */
final class ImageBounds {

    private ImageBounds() {
    }

    static void assertInBounds(byte[] image) {
        ByteBuffer b = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
        if (image.length >= 4 && b.getInt(0) == 0x464c457f) {
            assertElfInBounds(b.slice(0, image.length).order(ByteOrder.LITTLE_ENDIAN), image.length);
        } else if (image.length >= 4 && b.getInt(0) == 0xBA55ED50) {
            assertFatbinInBounds(b, image.length);
        } else {
            String text = new String(image, java.nio.charset.StandardCharsets.ISO_8859_1);
            int nul = text.indexOf('\0');
            String body = nul < 0 ? text : text.substring(0, nul);
            assertTrue(body.contains(".version") && body.contains(".target"), "accepted PTX has both directives");
            assertTrue(nul < 0 || text.substring(nul).chars().allMatch(c -> c == 0), "accepted PTX has NULs only at its end");
        }
    }

    private static void within(long offset, long size, long limit, Supplier<String> what) {
        assertTrue(offset >= 0 && size >= 0 && offset <= limit && size <= limit - offset,
                () -> what.get() + " [" + offset + ", +" + size + "] is not within " + limit + " bytes");
    }

    private static void assertElfInBounds(ByteBuffer b, long n) {
        assertTrue(n >= 64, "ELF header");
        long phoff = b.getLong(32);
        int phnum = Short.toUnsignedInt(b.getShort(56));
        if (phnum > 0) { // no table is read when there are no entries
            within(phoff, phnum * 56L, n, () -> "program header table");
        }
        for (int i = 0; i < phnum; i++) {
            int at = (int) phoff + 56 * i;
            int index = i;
            within(b.getLong(at + 8), b.getLong(at + 32), n, () -> "program header " + index);
        }
        long shoff = b.getLong(40);
        int shnum = Short.toUnsignedInt(b.getShort(60));
        int shstrndx = Short.toUnsignedInt(b.getShort(62));
        within(shoff, shnum * 64L, n, () -> "section header table");
        assertTrue(shstrndx < shnum, "e_shstrndx");
        long namesSize = b.getLong((int) shoff + 64 * shstrndx + 32);
        for (int i = 0; i < shnum; i++) {
            int at = (int) shoff + 64 * i;
            int type = b.getInt(at + 4);
            int index = i;
            if (type != 8 && type != 0x70000007 && type != 0x70000009 && type != 0x7000000a && type != 0x70000015) {
                within(b.getLong(at + 24), b.getLong(at + 32), n, () -> "section " + index);
            }
            assertTrue(Integer.toUnsignedLong(b.getInt(at)) < namesSize, () -> "name of section " + index);
            assertTrue(Integer.toUnsignedLong(b.getInt(at + 40)) < shnum, () -> "sh_link of section " + index);
        }
    }

    private static void assertFatbinInBounds(ByteBuffer b, long n) {
        int headerSize = Short.toUnsignedInt(b.getShort(6));
        long fatSize = b.getLong(8);
        within(headerSize, fatSize, n, () -> "fatbin entries");
        long end = headerSize + fatSize;
        for (long at = headerSize; at < end; ) {
            long entry = at;
            within(at, 64, end, () -> "entry header at " + entry);
            long entryHeader = Integer.toUnsignedLong(b.getInt((int) at + 4));
            long payload = b.getLong((int) at + 8);
            assertTrue(entryHeader >= 64, "entry header size");
            within(at + entryHeader, payload, end, () -> "payload of the entry at " + entry);
            boolean compressed = (b.getLong((int) at + 40) & 0xa000) != 0;
            if (b.getShort((int) at) == 2 && !compressed) {
                ByteBuffer elf = b.slice((int) (at + entryHeader), (int) payload).order(ByteOrder.LITTLE_ENDIAN);
                assertElfInBounds(elf, payload);
            }
            at += entryHeader + payload;
        }
    }
}
