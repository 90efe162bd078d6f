package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.CompiledProgram;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

class CacheEntryFormatTest {

    private static final String KEY = "a".repeat(64);

    private static CompiledProgram cubin(byte[] image, String log, Map<String, String> lowered) {
        return new CompiledProgram("k.cu", CompileTarget.cubin(9, 0), image, log, lowered, "13.0");
    }

    private static CompiledProgram sample() {
        Map<String, String> lowered = new LinkedHashMap<>();
        lowered.put("&scale<float>", "_Z5scaleIfEvPT_");
        lowered.put("&scale<double>", "_Z5scaleIdEvPT_");
        return cubin(new byte[] {0x7f, 'E', 'L', 'F', 0, 0, 1, 2}, "k.cu(3): warning: unused", lowered);
    }

    private static String reason(CacheEntryFormat.Decoded decoded) {
        return assertInstanceOf(CacheEntryFormat.Invalid.class, decoded).reason();
    }

    @Provide
    Arbitrary<Map<String, String>> loweredNames() {
        return Arbitraries.maps(Arbitraries.strings().ofMinLength(1).ofMaxLength(20),
                Arbitraries.strings().ofMinLength(1).ofMaxLength(20)).ofMaxSize(4);
    }

    @Property(tries = 200)
    void aCubinEntryRestoresExactlyTheProgram(@ForAll @Size(max = 300) byte[] image, @ForAll String log,
            @ForAll("loweredNames") Map<String, String> lowered) {
        CompiledProgram program = cubin(image, log, lowered);
        CacheEntryFormat.Valid valid = assertInstanceOf(CacheEntryFormat.Valid.class,
                CacheEntryFormat.decode(KEY, CacheEntryFormat.encode(KEY, program)));
        assertEquals(program, valid.program());
        assertEquals(program.sha256(), valid.program().sha256());
        assertEquals(program.loweredNames().keySet().stream().toList(),
                valid.program().loweredNames().keySet().stream().toList(), "lowered names keep their order");
    }

    @Property(tries = 100)
    void aPtxEntryRestoresExactlyTheProgram(@ForAll("ptxText") String ptx, @ForAll int major, @ForAll int minor) {
        CompileTarget target = CompileTarget.ptx(Math.floorMod(major, 99) + 1, Math.floorMod(minor, 10));
        CompiledProgram program = new CompiledProgram("p.cu", target, ptx.getBytes(StandardCharsets.UTF_8), "",
                Map.of(), "12.8");
        assertEquals(program, assertInstanceOf(CacheEntryFormat.Valid.class,
                CacheEntryFormat.decode(KEY, CacheEntryFormat.encode(KEY, program))).program());
    }

    @Provide
    Arbitrary<String> ptxText() {
        return Arbitraries.strings().excludeChars('\0').ofMaxLength(500);
    }

    @Example
    void everyTruncationIsRejected() {
        byte[] entry = CacheEntryFormat.encode(KEY, sample());
        for (int length = 0; length < entry.length; length++) {
            CacheEntryFormat.Decoded decoded = CacheEntryFormat.decode(KEY, Arrays.copyOf(entry, length));
            assertInstanceOf(CacheEntryFormat.Invalid.class, decoded, "accepted a file cut to " + length + " bytes");
        }
    }

    @Example
    void everySingleByteCorruptionIsRejected() {
        byte[] entry = CacheEntryFormat.encode(KEY, sample());
        for (int i = 0; i < entry.length; i++) {
            byte[] corrupt = entry.clone();
            corrupt[i] ^= 0x5a;
            assertInstanceOf(CacheEntryFormat.Invalid.class, CacheEntryFormat.decode(KEY, corrupt),
                    "accepted a file with byte " + i + " changed");
        }
    }

    @Example
    void appendedBytesAreRejected() {
        byte[] entry = CacheEntryFormat.encode(KEY, sample());
        assertTrue(reason(CacheEntryFormat.decode(KEY, Arrays.copyOf(entry, entry.length + 1))).contains("appended"));
    }

    @Example
    void aForeignFileIsRejected() {
        byte[] text = "some other tool's cache file, long enough to hold a header".getBytes(StandardCharsets.UTF_8);
        assertTrue(reason(CacheEntryFormat.decode(KEY, text)).contains("magic"));
    }

    @Example
    void anEntryOfAnotherFormatVersionIsRejected() {
        byte[] entry = CacheEntryFormat.encode(KEY, sample());
        ByteBuffer.wrap(entry).putInt(8, CacheEntryFormat.VERSION + 1);
        assertTrue(reason(CacheEntryFormat.decode(KEY, entry)).contains("version " + (CacheEntryFormat.VERSION + 1)));
    }

    @Example
    void anEntryWrittenForAnotherKeyIsRejected() {
        byte[] entry = CacheEntryFormat.encode("b".repeat(64), sample());
        assertTrue(reason(CacheEntryFormat.decode(KEY, entry)).contains("belongs to key " + "b".repeat(64)));
    }

    /** A payload with a valid checksum but nonsense inside: decode reports it and never throws. */
    @Property(tries = 300)
    void nonsenseWithAValidChecksumIsRejectedWithoutThrowing(@ForAll @Size(max = 200) byte[] payload) {
        byte[] entry = ByteBuffer.allocate(CacheEntryFormat.HEADER_BYTES + payload.length)
                .put("GATUNKRN".getBytes(StandardCharsets.US_ASCII)).putInt(CacheEntryFormat.VERSION)
                .putInt(payload.length).put(Sha256.newDigest().digest(payload)).put(payload).array();
        assertInstanceOf(CacheEntryFormat.Invalid.class, CacheEntryFormat.decode(KEY, entry));
    }
}
