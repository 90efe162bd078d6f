package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CompiledProgramTest {

    private static CompiledProgram ptx(String text) {
        return new CompiledProgram("k.cu", CompileTarget.ptx(9, 0), text.getBytes(StandardCharsets.UTF_8), "", Map.of(),
                "13.0");
    }

    @Test
    void theNativeFormOfPtxEndsWithOneNulForCuModuleLoadData() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = ptx(".version 9.0").toNative(arena);
            assertEquals(13, image.byteSize());
            assertEquals(0, image.get(ValueLayout.JAVA_BYTE, 12));
            assertEquals(".version 9.0", image.getString(0));
        }
    }

    @Test
    void theNativeFormOfACubinIsExactlyItsBytes() {
        byte[] elf = {0x7f, 'E', 'L', 'F', 0, 2, 0, 1};
        CompiledProgram cubin = new CompiledProgram("k.cu", CompileTarget.cubin(9, 0), elf, "", Map.of(), "13.0");
        try (Arena arena = Arena.ofConfined()) {
            assertArrayEquals(elf, cubin.toNative(arena).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void theDigestIsTheSha256OfTheImage() {
        // FIPS 180-2's test vector for "abc".
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ptx("abc").sha256());
    }

    @Test
    void theImageCannotBeChangedFromOutside() {
        byte[] bytes = "abc".getBytes(StandardCharsets.UTF_8);
        CompiledProgram program = new CompiledProgram("k.cu", CompileTarget.ptx(9, 0), bytes, "", Map.of(), "13.0");
        bytes[0] = 'x';
        program.image()[1] = 'y';
        assertEquals("abc", new String(program.image(), StandardCharsets.UTF_8));
    }

    @Test
    void ptxWithANulByteIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ptx("ab\0c"));
        assertTrue(e.getMessage().contains("offset 2"), e.getMessage());
    }

    @Test
    void equalityCoversEveryField() {
        CompiledProgram base = ptx("abc");
        assertEquals(base, ptx("abc"));
        assertEquals(base.hashCode(), ptx("abc").hashCode());
        assertNotEquals(base, ptx("abd"));
        assertNotEquals(base, new CompiledProgram("other.cu", CompileTarget.ptx(9, 0), "abc".getBytes(), "", Map.of(), "13.0"));
        assertNotEquals(base, new CompiledProgram("k.cu", CompileTarget.ptx(8, 0), "abc".getBytes(), "", Map.of(), "13.0"));
        assertNotEquals(base, new CompiledProgram("k.cu", CompileTarget.ptx(9, 0), "abc".getBytes(), "w", Map.of(), "13.0"));
        assertNotEquals(base, new CompiledProgram("k.cu", CompileTarget.ptx(9, 0), "abc".getBytes(), "", Map.of("&k", "_Z1k"), "13.0"));
        assertNotEquals(base, new CompiledProgram("k.cu", CompileTarget.ptx(9, 0), "abc".getBytes(), "", Map.of(), "13.1"));
    }
}
