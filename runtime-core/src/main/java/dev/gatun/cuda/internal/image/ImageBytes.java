package dev.gatun.cuda.internal.image;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Little-endian reads from an image that never leave it. Offsets and sizes read from an image
 * are unsigned; a 64-bit one at or above 2^63 is a negative long here, which {@link #fits}
 * treats as out of range, so no arithmetic on them can wrap.
 */
final class ImageBytes {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final MemorySegment bytes;

    ImageBytes(MemorySegment bytes) {
        this.bytes = bytes;
    }

    long size() {
        return bytes.byteSize();
    }

    /** The {@code size} bytes at {@code offset}, which the caller has checked with {@link #fits}. */
    ImageBytes slice(long offset, long size) {
        return new ImageBytes(bytes.asSlice(offset, size));
    }

    int u8(long offset) throws ImageFormatException {
        require(offset, 1);
        return Byte.toUnsignedInt(bytes.get(ValueLayout.JAVA_BYTE, offset));
    }

    int u16(long offset) throws ImageFormatException {
        require(offset, 2);
        return Short.toUnsignedInt(bytes.get(U16, offset));
    }

    long u32(long offset) throws ImageFormatException {
        require(offset, 4);
        return Integer.toUnsignedLong(bytes.get(U32, offset));
    }

    /** The raw 64 bits: negative when the unsigned value is 2^63 or more. */
    long u64(long offset) throws ImageFormatException {
        require(offset, 8);
        return bytes.get(U64, offset);
    }

    /** The offset of the first NUL in {@code [from, to)}, or -1. */
    long indexOfNul(long from, long to) {
        for (long i = from; i < to; i++) {
            if (bytes.get(ValueLayout.JAVA_BYTE, i) == 0) {
                return i;
            }
        }
        return -1;
    }

    /** The bytes of {@code [from, to)} as Latin-1 text: one char per byte, whatever they are. */
    String latin1(long from, long to) {
        byte[] text = bytes.asSlice(from, to - from).toArray(ValueLayout.JAVA_BYTE);
        return new String(text, StandardCharsets.ISO_8859_1);
    }

    /** The first {@code n} bytes (fewer if the image is shorter) in hex, for messages. */
    String head(int n) {
        StringBuilder sb = new StringBuilder();
        for (long i = 0; i < Math.min(n, size()); i++) {
            sb.append(i == 0 ? "" : " ").append(String.format(Locale.ROOT, "%02x", bytes.get(ValueLayout.JAVA_BYTE, i)));
        }
        return sb.toString();
    }

    /** A read the checks before it should already have bounded; a backstop, never an IndexOutOfBoundsException. */
    private void require(long offset, long n) throws ImageFormatException {
        if (!fits(offset, n, size())) {
            throw new ImageFormatException("a field of " + n + " bytes at offset " + hex(offset) + " lies past the end of the bytes ("
                    + bytes(size()) + ")");
        }
    }

    /** Whether {@code [offset, offset + size)} lies within {@code [0, limit)}, for unsigned offset and size. */
    static boolean fits(long offset, long size, long limit) {
        return offset >= 0 && size >= 0 && offset <= limit && size <= limit - offset;
    }

    static String hex(long value) {
        return "0x" + Long.toHexString(value);
    }

    /** An unsigned 64-bit count, e.g. {@code 12,345 bytes} or {@code 18446744073709551615 bytes}. */
    static String bytes(long n) {
        return (n >= 0 ? String.format(Locale.ROOT, "%,d", n) : Long.toUnsignedString(n)) + (n == 1 ? " byte" : " bytes");
    }
}
