package dev.gatun.cuda.testing;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Builds a fatbin as nvcc writes one: a 16-byte header (magic 0xBA55ED50, version 1, header
 * size 16, fat size), then entries back to back, each a 64-byte entry header (kind, version
 * 0x0101, header size, payload size padded to 8, compressed size, code version, SM arch, flags
 * 0x11 for 64-bit Linux code, 0x8000 more when compressed, uncompressed size) and its payload.
 */
public final class FatbinBuilder {

    public static final int HEADER_SIZE = 16;
    public static final int ENTRY_HEADER_SIZE = 64;

    private FatbinBuilder() {
    }

    /** One entry: what it holds, for which SM, and whether its payload is compressed. */
    public record Entry(int kind, int arch, byte[] payload, boolean compressed, int uncompressedSize) {

        /** An uncompressed cubin. */
        public static Entry elf(int arch, byte[] cubin) {
            return new Entry(2, arch, cubin, false, 0);
        }

        /** Uncompressed PTX text, NUL-terminated as nvcc stores it. */
        public static Entry ptx(int arch, String text) {
            return new Entry(1, arch, (text + "\0").getBytes(StandardCharsets.UTF_8), false, 0);
        }

        /** A compressed payload: its contents are the driver's to decompress. */
        public static Entry compressed(int kind, int arch, byte[] data, int uncompressedSize) {
            return new Entry(kind, arch, data, true, uncompressedSize);
        }
    }

    public static byte[] fatbin(Entry... entries) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (Entry e : entries) {
            int padded = (e.payload.length + 7) & ~7;
            ByteBuffer h = ByteBuffer.allocate(ENTRY_HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            h.putShort((short) e.kind).putShort((short) 0x0101).putInt(ENTRY_HEADER_SIZE).putLong(padded);
            h.putInt(e.compressed ? e.payload.length : 0).putInt(0);
            h.putShort((short) (e.kind == 2 ? 8 : 0)).putShort((short) (e.kind == 2 ? 1 : 9)); // code version
            h.putInt(e.arch).putInt(0).putInt(0);
            h.putLong(0x11 | (e.compressed ? 0x8000 : 0)).putLong(0).putLong(e.uncompressedSize);
            body.writeBytes(h.array());
            body.writeBytes(Arrays.copyOf(e.payload, padded));
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        header.putInt(0xBA55ED50).putShort((short) 1).putShort((short) HEADER_SIZE).putLong(body.size());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(header.array());
        out.writeBytes(body.toByteArray());
        return out.toByteArray();
    }
}
