package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.CompiledProgram;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.Mac;

/**
 * The bytes of one kernel cache entry. A header (magic, format version, payload length, digest
 * of the payload) guards a payload that holds the entry's own key and every field of the
 * {@link CompiledProgram}. Decoding checks all of it, so a truncated, corrupted or foreign file,
 * or one written for another key, is reported as {@link Invalid} and never half-read.
 *
 * <p>The digest is a SHA-256 of the payload, which anyone can compute: it detects corruption,
 * not forgery. An authenticated cache writes an HMAC-SHA256 of the payload under the user's
 * {@link EntryKey} instead (and another magic), and accepts nothing else: an entry without a MAC
 * that verifies is {@link Unauthenticated}. Since the payload holds the entry's key, a MAC also
 * binds the program to the compile it is the result of.
 */
public final class CacheEntryFormat {

    private static final byte[] MAGIC = "GATUNKRN".getBytes(StandardCharsets.US_ASCII);
    /** The magic of an entry whose digest is an HMAC (the same length, so the layout is the same). */
    private static final byte[] MAC_MAGIC = "GATUNKRM".getBytes(StandardCharsets.US_ASCII);
    /** Bump when the payload layout changes; entries of another version are ignored and rewritten. */
    static final int VERSION = 1;
    static final int HEADER_BYTES = MAGIC.length + Integer.BYTES + Integer.BYTES + Sha256.BYTES;

    private CacheEntryFormat() {
    }

    /** What a file decoded to. */
    public sealed interface Decoded permits Valid, Invalid, Unauthenticated {
    }

    /** A sound entry for the expected key. */
    public record Valid(CompiledProgram program) implements Decoded {
    }

    /** An entry to ignore, and why. */
    public record Invalid(String reason) implements Decoded {
    }

    /** An entry an authenticated cache ignores: no MAC, or one that does not verify under the user's key. */
    public record Unauthenticated(String reason) implements Decoded {
    }

    public static byte[] encode(String key, CompiledProgram program) {
        return encode(key, program, null);
    }

    /** As {@link #encode(String, CompiledProgram)}, authenticated under {@code macKey} when it is not null. */
    public static byte[] encode(String key, CompiledProgram program, byte[] macKey) {
        ByteArrayOutputStream payloadBytes = new ByteArrayOutputStream(Math.toIntExact(program.imageBytes() + 1024));
        try (DataOutputStream out = new DataOutputStream(payloadBytes)) {
            writeText(out, key);
            writeText(out, program.programName());
            writeText(out, program.kind().name());
            out.writeInt(program.target().major());
            out.writeInt(program.target().minor());
            writeText(out, program.nvrtcVersion());
            writeText(out, program.log());
            out.writeInt(program.loweredNames().size());
            for (Map.Entry<String, String> e : program.loweredNames().entrySet()) {
                writeText(out, e.getKey());
                writeText(out, e.getValue());
            }
            writeBytes(out, program.image());
        } catch (IOException e) {
            throw new UncheckedIOException("a byte array stream cannot fail", e);
        }
        byte[] payload = payloadBytes.toByteArray();
        byte[] digest = macKey == null ? Sha256.newDigest().digest(payload) : Sha256.newHmac(macKey).doFinal(payload);
        return ByteBuffer.allocate(HEADER_BYTES + payload.length).put(macKey == null ? MAGIC : MAC_MAGIC).putInt(VERSION)
                .putInt(payload.length).put(digest).put(payload).array();
    }

    public static Decoded decode(String expectedKey, byte[] entry) {
        return decode(expectedKey, entry, null);
    }

    /**
     * As {@link #decode(String, byte[])}; with a {@code macKey}, only an entry whose HMAC verifies
     * under it is {@link Valid}.
     */
    public static Decoded decode(String expectedKey, byte[] entry, byte[] macKey) {
        if (entry.length < HEADER_BYTES) {
            return new Invalid("truncated: " + entry.length + " bytes, shorter than the " + HEADER_BYTES + "-byte header");
        }
        ByteBuffer in = ByteBuffer.wrap(entry);
        byte[] magic = new byte[MAGIC.length];
        in.get(magic);
        boolean authenticated = Arrays.equals(magic, MAC_MAGIC);
        if (!authenticated && !Arrays.equals(magic, MAGIC)) {
            return new Invalid("not a Gatun kernel cache entry (wrong magic)");
        }
        int version = in.getInt();
        if (version != VERSION) {
            return new Invalid("entry format version " + version + ", this Gatun reads version " + VERSION);
        }
        int length = in.getInt();
        if (length != entry.length - HEADER_BYTES) {
            return new Invalid("payload is " + (entry.length - HEADER_BYTES) + " bytes, the header says " + length
                    + " (truncated or appended to)");
        }
        byte[] checksum = new byte[Sha256.BYTES];
        in.get(checksum);
        if (macKey != null) {
            if (!authenticated) {
                return new Unauthenticated("it has no MAC (it was written by a cache that does not authenticate)");
            }
            Mac mac = Sha256.newHmac(macKey);
            mac.update(entry, HEADER_BYTES, length);
            if (!MessageDigest.isEqual(checksum, mac.doFinal())) {
                return new Unauthenticated("its MAC does not verify under this user's key (another user's entry, "
                        + "a forged one, or a corrupted one)");
            }
        } else if (authenticated) {
            return new Invalid("it carries a MAC, and this cache does not authenticate (gatun.kernelCache.authenticate)");
        } else {
            MessageDigest digest = Sha256.newDigest();
            digest.update(entry, HEADER_BYTES, length);
            if (!MessageDigest.isEqual(checksum, digest.digest())) {
                return new Invalid("payload checksum mismatch (corrupted)");
            }
        }
        try {
            return readPayload(expectedKey, in);
        } catch (BufferUnderflowException | IllegalArgumentException | NullPointerException e) {
            // The checksum matched, so these bytes were written like this: by another writer
            // of the same format version, or a bug. Either way, not something to load.
            return new Invalid("malformed payload: " + e);
        }
    }

    private static Decoded readPayload(String expectedKey, ByteBuffer in) {
        String key = readText(in);
        if (!key.equals(expectedKey)) {
            return new Invalid("entry belongs to key " + key);
        }
        String programName = readText(in);
        CompileTarget.Kind kind = CompileTarget.Kind.valueOf(readText(in));
        CompileTarget target = new CompileTarget(kind, in.getInt(), in.getInt());
        String nvrtcVersion = readText(in);
        String log = readText(in);
        int names = in.getInt();
        if (names < 0) {
            return new Invalid("negative lowered-name count " + names);
        }
        Map<String, String> lowered = new LinkedHashMap<>();
        for (int i = 0; i < names; i++) {
            lowered.put(readText(in), readText(in));
        }
        byte[] image = readBytes(in);
        if (in.hasRemaining()) {
            return new Invalid(in.remaining() + " bytes after the payload");
        }
        return new Valid(new CompiledProgram(programName, target, image, log, lowered, nvrtcVersion));
    }

    private static void writeText(DataOutputStream out, String text) throws IOException {
        writeBytes(out, text.getBytes(StandardCharsets.UTF_8));
    }

    private static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private static String readText(ByteBuffer in) {
        return new String(readBytes(in), StandardCharsets.UTF_8);
    }

    private static byte[] readBytes(ByteBuffer in) {
        int length = in.getInt();
        if (length < 0 || length > in.remaining()) {
            throw new IllegalArgumentException("field length " + length + " with " + in.remaining() + " bytes left");
        }
        byte[] bytes = new byte[length];
        in.get(bytes);
        return bytes;
    }
}
