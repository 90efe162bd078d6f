package dev.gatun.cuda.internal.nvrtc;

import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** SHA-256 and HMAC-SHA256, which every Java platform must provide (the documented minimum sets). */
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

    /** HMAC-SHA256 under {@code key}, which every Java platform must provide too (Mac's documented minimum set). */
    public static Mac newHmac(byte[] key) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac;
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("this Java runtime lacks HmacSHA256, which the platform requires", e);
        }
    }

    /** Lower-case hex of the digest of {@code bytes}. */
    public static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(newDigest().digest(bytes));
    }
}
