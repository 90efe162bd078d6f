package dev.gatun.cuda.internal.transfer;

import dev.gatun.cuda.internal.context.NativeResource;

/** Argument checks shared by every copy, made before any driver call. */
public final class Ranges {

    private Ranges() {
    }

    /** Returns the length when both sides have it; otherwise rejects the copy. */
    public static long sameLength(long destinationBytes, long sourceBytes) {
        if (destinationBytes != sourceBytes) {
            throw new IllegalArgumentException("copy sizes differ: the source has " + sourceBytes
                    + " bytes, the destination " + destinationBytes + "; slice one side to the length you mean");
        }
        return sourceBytes;
    }

    /**
     * Checks that [offset, offset + length) lies inside [0, size). The message is built only on
     * failure: this runs on transfer paths that must not allocate.
     *
     * @param role what the range is, e.g. "upload source"
     * @param owner whose range it is (named by its identity)
     */
    public static void checkRange(long offset, long length, long size, String role, NativeResource owner) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw new IndexOutOfBoundsException(role + " " + owner.identity() + ": range [" + offset + ", " + offset + " + " + length
                    + ") is outside its " + size + " bytes");
        }
    }
}
