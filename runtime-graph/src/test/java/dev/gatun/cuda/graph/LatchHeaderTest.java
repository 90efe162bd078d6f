package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class LatchHeaderTest {

    @Test
    void theHeaderDeclaresTheRaiseFunction() {
        String text = LatchHeader.text();
        assertTrue(text.contains(
                "__device__ __forceinline__ void gatun_latch_raise(unsigned int* word, unsigned int bits)"), text);
        assertTrue(text.contains("atomicOr(word, bits);"), text);
        assertTrue(text.contains("#ifndef GATUN_LATCH_CUH"), text);
    }

    @Test
    void theHeaderAndTheJavaConstantsAgree() {
        String text = LatchHeader.text();
        String outOfRange = define(text, "GATUN_LATCH_OUT_OF_RANGE");
        assertEquals(LatchFlags.OUT_OF_RANGE, Integer.decode(outOfRange.replace("u", "")));
        assertEquals(LatchFlags.FIRST_USER_BIT, Integer.parseInt(define(text, "GATUN_LATCH_FIRST_USER_BIT")));
        assertEquals(1 << 8, LatchFlags.user(0));
        assertEquals(1 << 31, LatchFlags.user(LatchFlags.USER_BITS - 1));
        assertThrows(IllegalArgumentException.class, () -> LatchFlags.user(LatchFlags.USER_BITS));
        assertThrows(IllegalArgumentException.class, () -> LatchFlags.user(-1));
    }

    private static String define(String text, String name) {
        Matcher matcher = Pattern.compile("#define " + name + " (\\S+)").matcher(text);
        assertTrue(matcher.find(), name + " is not defined");
        return matcher.group(1);
    }

    @Test
    void theIncludeDirectoryHoldsTheHeaderAndIsWrittenOnce() throws IOException {
        Path directory = LatchHeader.includeDirectory();
        Path file = directory.resolve(LatchHeader.FILE_NAME);
        assertEquals(LatchHeader.text(), Files.readString(file, StandardCharsets.UTF_8));
        assertEquals(directory, LatchHeader.includeDirectory());

        Files.delete(file);
        Path rewritten = LatchHeader.includeDirectory();
        Path again = rewritten.resolve(LatchHeader.FILE_NAME);
        assertEquals(LatchHeader.text(), Files.readString(again, StandardCharsets.UTF_8));
    }
}
