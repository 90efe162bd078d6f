package dev.gatun.cuda.internal.nvrtc;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256, which every Java platform must provide (MessageDigest's documented minimum set). */
public final class Sha256 {

    /** Bytes in a digest. */
    public static final int BYTES = 32;

    private Sha256() {
    }

    public static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this Java runtime lacks SHA-256, which the platform requires", e);
        }
    }

    /** Lower-case hex of the digest of {@code bytes}. */
    public static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(newDigest().digest(bytes));
    }
}
