package dev.gatun.cuda.internal.nvrtc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The content address of a compilation: SHA-256 over every input that can change the image or
 * its log. Each string is written as its UTF-8 length then its bytes, each list as its size then
 * its strings, in one fixed order, so no two different requests encode to the same bytes
 * ({@code ["ab", "c"]} and {@code ["a", "bc"]} differ in their lengths).
 *
 * <p>The caller's include directories count by their content, never by their path
 * ({@link IncludeDirectoryContent}): NVRTC does not say which headers it read, so every file
 * under them counts, and the same headers unpacked into a fresh temporary directory by each JVM
 * (as Gatun's own device headers may be) give the same key. Their {@code -I} options are left
 * out for that reason; their order is kept, since it decides which of two same-named headers
 * wins. The toolkit's include directories count by their path: they are found at fixed places,
 * and their headers change with the toolkit, whose NVRTC version is part of the key; reading
 * the whole toolkit's headers (tens of megabytes) for every compile would cost more than most
 * compiles.
 */
public final class CacheKey {

    /** Changes whenever the encoding below does, so an old key can never match a new request. */
    private static final String ENCODING = "gatun-kernel-cache-key/2";

    private CacheKey() {
    }

    /**
     * 64 lower-case hex digits.
     *
     * @throws IOException when a file under one of the caller's include directories cannot be read
     */
    public static String of(CompileRequest request) throws IOException {
        MessageDigest digest = Sha256.newDigest();
        text(digest, ENCODING);
        text(digest, request.source());
        text(digest, request.options().programName());
        text(digest, request.options().target().kind().name());
        text(digest, request.options().target().architecture());
        text(digest, request.nvrtcVersion());
        texts(digest, request.options().options());
        List<String> callerHeaders = new ArrayList<>();
        for (Path dir : request.callerIncludeDirectories()) {
            callerHeaders.add(IncludeDirectoryContent.digest(dir));
        }
        texts(digest, callerHeaders);
        texts(digest, request.toolkitIncludeDirectories().stream().map(Path::toString).toList());
        texts(digest, request.options().nameExpressions());
        return HexFormat.of().formatHex(digest.digest());
    }

    private static void texts(MessageDigest digest, List<String> values) {
        length(digest, values.size());
        for (String value : values) {
            text(digest, value);
        }
    }

    /** Writes {@code value} as its UTF-8 length (4 bytes, big-endian) then its bytes. */
    static void text(MessageDigest digest, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        length(digest, bytes.length);
        digest.update(bytes);
    }

    private static void length(MessageDigest digest, int length) {
        digest.update(ByteBuffer.allocate(Integer.BYTES).putInt(length).array());
    }
}
