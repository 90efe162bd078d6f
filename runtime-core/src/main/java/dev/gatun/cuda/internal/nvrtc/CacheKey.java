package dev.gatun.cuda.internal.nvrtc;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;

/**
 * The content address of a compilation: SHA-256 over every input that can change the image or
 * its log. Each string is written as its UTF-8 length then its bytes, each list as its size then
 * its strings, in one fixed order, so no two different requests encode to the same bytes
 * ({@code ["ab", "c"]} and {@code ["a", "bc"]} differ in their lengths).
 *
 * <p>The contents of headers found through include directories are not part of the key: they
 * are only known after NVRTC has preprocessed the source. The toolkit's headers change with the
 * NVRTC version, which is part of the key; a caller whose own headers change must change the
 * source or an option (e.g. {@code -DHEADERS_REVISION=7}) to get a new key.
 */
public final class CacheKey {

    /** Changes whenever the encoding below does, so an old key can never match a new request. */
    private static final String ENCODING = "gatun-kernel-cache-key/1";

    private CacheKey() {
    }

    /** 64 lower-case hex digits. */
    public static String of(CompileRequest request) {
        MessageDigest digest = Sha256.newDigest();
        text(digest, ENCODING);
        text(digest, request.source());
        text(digest, request.options().programName());
        text(digest, request.options().target().kind().name());
        text(digest, request.options().target().architecture());
        text(digest, request.nvrtcVersion());
        texts(digest, request.arguments());
        texts(digest, request.includeDirectories().stream().map(Path::toString).toList());
        texts(digest, request.options().nameExpressions());
        return HexFormat.of().formatHex(digest.digest());
    }

    private static void texts(MessageDigest digest, List<String> values) {
        length(digest, values.size());
        for (String value : values) {
            text(digest, value);
        }
    }

    private static void text(MessageDigest digest, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        length(digest, bytes.length);
        digest.update(bytes);
    }

    private static void length(MessageDigest digest, int length) {
        digest.update(ByteBuffer.allocate(Integer.BYTES).putInt(length).array());
    }
}
