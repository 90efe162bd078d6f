package dev.gatun.cuda.internal.image;

import java.lang.foreign.MemorySegment;

/**
 * Checks that bytes are PTX text as the driver reads it: a C string. The driver stops at the
 * first NUL, so a NUL may only end the text (any number of NULs may pad it, as in a fatbin); a
 * text without one is loaded with a NUL appended, by the caller. The text must hold the
 * {@code .version} and {@code .target} directives that every PTX module starts with, which is
 * also what tells PTX apart from bytes that are no image at all.
 */
public final class PtxImage {

    private PtxImage() {
    }

    public static void check(MemorySegment text) throws ImageFormatException {
        check(new ImageBytes(text));
    }

    static void check(ImageBytes ptx) throws ImageFormatException {
        long size = ptx.size();
        long nul = ptx.indexOfNul(0, size);
        long end = nul < 0 ? size : nul;
        if (nul >= 0) {
            for (long i = nul + 1; i < size; i++) {
                if (ptx.u8(i) != 0) {
                    throw new ImageFormatException("it has a NUL byte at offset " + nul + " and more text after it (offset " + i
                            + "); the driver reads PTX only up to its first NUL, so the rest would be silently dropped");
                }
            }
        }
        String source = ptx.latin1(0, end);
        if (!hasDirective(source, ".version")) {
            throw new ImageFormatException("it has no .version directive, so it is not PTX text; nor is it a CUBIN or a fatbin"
                    + " (its first bytes are " + ptx.head(4) + ", not the ELF magic 7f 45 4c 46 nor the fatbin magic 50 ed 55 ba)");
        }
        if (!hasDirective(source, ".target")) {
            throw new ImageFormatException("it has no .target directive; PTX names its target architecture after .version");
        }
    }

    /** Whether {@code directive} occurs as a word: after the start or white space, before white space. */
    private static boolean hasDirective(String source, String directive) {
        for (int at = source.indexOf(directive); at >= 0; at = source.indexOf(directive, at + 1)) {
            int after = at + directive.length();
            boolean startsWord = at == 0 || Character.isWhitespace(source.charAt(at - 1));
            boolean endsWord = after < source.length() && Character.isWhitespace(source.charAt(after));
            if (startsWord && endsWord) {
                return true;
            }
        }
        return false;
    }
}
