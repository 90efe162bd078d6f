package dev.gatun.cuda.internal.image;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** What the image tests share: the real toolchain images among the test resources, and little-endian patches. */
final class Images {

    private Images() {
    }

    /** A real image made by nvcc (see images/README.md in the test resources). */
    static byte[] real(String name) {
        try (InputStream in = Images.class.getResourceAsStream("/dev/gatun/cuda/images/" + name)) {
            if (in == null) {
                throw new IllegalStateException("missing test resource images/" + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] put16(byte[] image, int at, int value) {
        byte[] copy = image.clone();
        ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN).putShort(at, (short) value);
        return copy;
    }

    static byte[] put32(byte[] image, int at, long value) {
        byte[] copy = image.clone();
        ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN).putInt(at, (int) value);
        return copy;
    }

    static byte[] put64(byte[] image, int at, long value) {
        byte[] copy = image.clone();
        ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN).putLong(at, value);
        return copy;
    }

    static byte[] put8(byte[] image, int at, int value) {
        byte[] copy = image.clone();
        copy[at] = (byte) value;
        return copy;
    }
}
