package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.CubinBuilder;
import dev.gatun.cuda.testing.FatbinBuilder;
import dev.gatun.cuda.testing.FatbinBuilder.Entry;
import dev.gatun.cuda.testing.Ptx;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * Truncated and corrupted images are either rejected by the image checks (an
 * {@link IllegalArgumentException} naming the image) or accepted with every table, section and entry within their bytes; no other exception
 * (an index out of bounds, an arithmetic overflow, a huge allocation) ever escapes the checks.
 */
class ModuleImagePropertiesTest {

    private static final byte[] CUBIN = CubinBuilder.cubin("k", Ptx.module("k", "u64", "u32"));
    private static final byte[] FATBIN = FatbinBuilder.fatbin(Entry.elf(90, CUBIN), Entry.ptx(90, Ptx.module("k", "u64")));
    private static final List<String> REAL = List.of("saxpy-sm90.cubin", "saxpy-sm90-rdc.cubin", "saxpy-sm90-sm80.fatbin",
            "saxpy-sm90-sm80-ptx-zstd.fatbin", "saxpy-sm90.ptx");

    private static byte[] real(String name) {
        try (InputStream in = ModuleImagePropertiesTest.class.getResourceAsStream("/dev/gatun/cuda/images/" + name)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** Either a typed rejection, or an image whose every table lies in its bytes. */
    private static void rejectedOrInBounds(byte[] image) {
        ModuleImage accepted;
        try {
            accepted = ModuleImage.of("corrupt", image);
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().startsWith("module image corrupt "), expected.getMessage());
            return;
        }
        ImageBounds.assertInBounds(image);
        if (accepted.kind() == ModuleImage.Kind.PTX) {
            byte[] loadable = accepted.loadableBytes();
            org.junit.jupiter.api.Assertions.assertEquals(0, loadable[loadable.length - 1], "PTX reaches the driver NUL-terminated");
        }
    }

    @Test
    void everyTruncationOfACubinOrFatbinIsRejected() {
        for (byte[] image : List.of(CUBIN, FATBIN, real("saxpy-sm90.cubin"), real("saxpy-sm90-rdc.cubin"),
                real("saxpy-sm90-sm80.fatbin"), real("saxpy-sm90-sm80-all-zstd.fatbin"))) {
            for (int length = 0; length < image.length; length++) {
                byte[] cut = Arrays.copyOf(image, length);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModuleImage.of("cut", cut),
                        () -> "length " + cut.length);
                assertTrue(e.getMessage().startsWith("module image cut "), e.getMessage());
            }
        }
    }

    @Test
    void everyTruncationOfPtxIsRejectedOrStillHoldsItsDirectives() {
        for (byte[] image : List.of(Ptx.module("k", "u64").getBytes(), real("saxpy-sm90.ptx"))) {
            for (int length = 0; length < image.length; length++) {
                rejectedOrInBounds(Arrays.copyOf(image, length));
            }
        }
    }

    /** One corruption: flip a bit, overwrite a byte, or overwrite a 4- or 8-byte field with an awkward value. */
    record Edit(int mode, int position, long value) {

        void apply(byte[] image) {
            int at = Math.floorMod(position, image.length);
            ByteBuffer b = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
            int width = mode == 2 ? 4 : mode == 3 ? 8 : 1;
            if (mode == 0) {
                image[at] ^= (byte) (1 << (value & 7));
            } else if (width > image.length || width == 1) {
                image[at] = (byte) value;
            } else if (width == 4) {
                b.putInt(Math.min(at & ~3, image.length - 4), (int) value);
            } else {
                b.putLong(Math.min(at & ~7, image.length - 8), value);
            }
        }
    }

    @Provide
    Arbitrary<byte[]> images() {
        return Arbitraries.of(List.of(CUBIN, FATBIN, real(REAL.get(0)), real(REAL.get(1)), real(REAL.get(2)),
                real(REAL.get(3)), real(REAL.get(4))));
    }

    @Provide
    Arbitrary<Edit> edits() {
        // Headers and tables are where offsets live: a third of the positions fall in the first 64 bytes.
        Arbitrary<Integer> position = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 63)),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().greaterOrEqual(0)));
        Arbitrary<Long> value = Arbitraries.oneOf(Arbitraries.of(0L, -1L, 1L, 0x7fffffffL, 0xffffffffL, Long.MAX_VALUE,
                Long.MIN_VALUE, 0xff00L, 0xffffL, 64L, 56L), Arbitraries.longs(), Arbitraries.longs().between(0, 1 << 16));
        return Combinators.combine(Arbitraries.integers().between(0, 3), position, value).as(Edit::new);
    }

    @Provide
    Arbitrary<List<Edit>> editLists() {
        return edits().list().ofMinSize(1).ofMaxSize(6);
    }

    @Property(tries = 1500)
    void corruptionsAreRejectedOrLeaveEveryTableInBounds(@ForAll("images") byte[] original,
            @ForAll("editLists") List<Edit> edits) {
        byte[] image = original.clone();
        edits.forEach(e -> e.apply(image));
        rejectedOrInBounds(image);
    }

    @Property(tries = 300)
    void corruptedAndTruncatedImagesAreRejectedOrInBounds(@ForAll("images") byte[] original, @ForAll("edits") Edit edit,
            @ForAll int cut) {
        byte[] image = Arrays.copyOf(original, 1 + Math.floorMod(cut, original.length));
        edit.apply(image);
        rejectedOrInBounds(image);
    }
}
