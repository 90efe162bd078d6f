package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Builders;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class CacheKeyTest {

    /** Every input of a compile, as plain values, so a property can change exactly one. */
    record Inputs(String source, String programName, CompileTarget.Kind kind, int major, int minor,
            List<String> options, List<String> userIncludes, List<String> toolkitIncludes, List<String> names,
            String nvrtcVersion) {

        CompileRequest request() {
            CompileOptions.Builder b = CompileOptions.builder(new CompileTarget(kind, major, minor)).programName(programName)
                    .options(options.toArray(String[]::new));
            userIncludes.forEach(dir -> b.includeDirectory(Path.of(dir)));
            names.forEach(b::nameExpression);
            return new CompileRequest(source, b.build(), toolkitIncludes.stream().map(Path::of).toList(), nvrtcVersion);
        }

        Inputs change(Field field, String word) {
            return switch (field) {
                case SOURCE -> new Inputs(source + "\n// " + word, programName, kind, major, minor, options,
                        userIncludes, toolkitIncludes, names, nvrtcVersion);
                case PROGRAM_NAME -> new Inputs(source, programName + "_" + word, kind, major, minor, options,
                        userIncludes, toolkitIncludes, names, nvrtcVersion);
                case KIND -> new Inputs(source, programName,
                        kind == CompileTarget.Kind.PTX ? CompileTarget.Kind.CUBIN : CompileTarget.Kind.PTX, major, minor,
                        options, userIncludes, toolkitIncludes, names, nvrtcVersion);
                case MAJOR -> new Inputs(source, programName, kind, major % 99 + 1, minor, options, userIncludes,
                        toolkitIncludes, names, nvrtcVersion);
                case MINOR -> new Inputs(source, programName, kind, major, (minor + 1) % 10, options, userIncludes,
                        toolkitIncludes, names, nvrtcVersion);
                case OPTION_ADDED -> new Inputs(source, programName, kind, major, minor, plus(options, "-D" + word),
                        userIncludes, toolkitIncludes, names, nvrtcVersion);
                case OPTION_DROPPED -> new Inputs(source, programName, kind, major, minor,
                        options.subList(0, Math.max(0, options.size() - 1)), userIncludes, toolkitIncludes, names,
                        nvrtcVersion);
                case USER_INCLUDE -> new Inputs(source, programName, kind, major, minor, options,
                        plus(userIncludes, "/user/added/" + word), toolkitIncludes, names, nvrtcVersion);
                case TOOLKIT_INCLUDE -> new Inputs(source, programName, kind, major, minor, options, userIncludes,
                        plus(toolkitIncludes, "/toolkit/added/" + word), names, nvrtcVersion);
                case NAME_EXPRESSION -> new Inputs(source, programName, kind, major, minor, options, userIncludes,
                        toolkitIncludes, plus(names, "&added<" + word + ">"), nvrtcVersion);
                case NVRTC_VERSION -> new Inputs(source, programName, kind, major, minor, options, userIncludes,
                        toolkitIncludes, names, nvrtcVersion + "." + word);
            };
        }

        private static List<String> plus(List<String> list, String more) {
            List<String> copy = new ArrayList<>(list);
            copy.add(more);
            return copy;
        }
    }

    enum Field {
        SOURCE, PROGRAM_NAME, KIND, MAJOR, MINOR, OPTION_ADDED, OPTION_DROPPED, USER_INCLUDE, TOOLKIT_INCLUDE,
        NAME_EXPRESSION, NVRTC_VERSION
    }

    @Provide
    Arbitrary<String> words() {
        return Arbitraries.strings().alpha().numeric().ofMinLength(1).ofMaxLength(8);
    }

    @Provide
    Arbitrary<Inputs> inputs() {
        Arbitrary<String> word = words();
        return Builders.withBuilder(() -> new Object[10])
                .use(Arbitraries.strings().excludeChars('\0').ofMaxLength(200)).in((a, v) -> set(a, 0, v))
                .use(word.map(w -> w + ".cu")).in((a, v) -> set(a, 1, v))
                .use(Arbitraries.of(CompileTarget.Kind.class)).in((a, v) -> set(a, 2, v))
                .use(Arbitraries.integers().between(1, 99)).in((a, v) -> set(a, 3, v))
                .use(Arbitraries.integers().between(0, 9)).in((a, v) -> set(a, 4, v))
                .use(word.map(w -> "-D" + w).list().ofMaxSize(4)).in((a, v) -> set(a, 5, v))
                .use(word.map(w -> "/user/" + w).list().uniqueElements().ofMaxSize(3)).in((a, v) -> set(a, 6, v))
                .use(word.map(w -> "/toolkit/" + w).list().uniqueElements().ofMaxSize(2)).in((a, v) -> set(a, 7, v))
                .use(word.map(w -> "k<" + w + ">").list().uniqueElements().ofMaxSize(3)).in((a, v) -> set(a, 8, v))
                .use(Arbitraries.of("12.8", "13.0", "13.1")).in((a, v) -> set(a, 9, v))
                .build(CacheKeyTest::inputsOf);
    }

    private static Object[] set(Object[] values, int index, Object value) {
        values[index] = value;
        return values;
    }

    @SuppressWarnings("unchecked")
    private static Inputs inputsOf(Object[] v) {
        return new Inputs((String) v[0], (String) v[1], (CompileTarget.Kind) v[2], (Integer) v[3], (Integer) v[4],
                (List<String>) v[5], (List<String>) v[6], (List<String>) v[7], (List<String>) v[8], (String) v[9]);
    }

    @Property(tries = 300)
    void changingAnyOneInputChangesTheKey(@ForAll("inputs") Inputs base, @ForAll Field field,
            @ForAll("words") String word) throws IOException {
        Assume.that(field != Field.OPTION_DROPPED || !base.options().isEmpty());
        assertNotEquals(CacheKey.of(base.request()), CacheKey.of(base.change(field, word).request()),
                () -> "changing " + field + " kept the key");
    }

    @Property(tries = 200)
    void theSameInputsAlwaysGiveTheSameKey(@ForAll("inputs") Inputs inputs) throws IOException {
        String key = CacheKey.of(inputs.request());
        assertEquals(key, CacheKey.of(inputs.request()));
        assertTrue(key.matches("[0-9a-f]{64}"), key);
    }

    @Example
    void optionOrderMattersAndFieldBoundariesCannotBeShifted() throws IOException {
        Inputs ab = new Inputs("s", "p.cu", CompileTarget.Kind.PTX, 9, 0, List.of("-Dab", "-Dc"), List.of(), List.of(),
                List.of(), "13.0");
        Inputs shifted = new Inputs("s", "p.cu", CompileTarget.Kind.PTX, 9, 0, List.of("-Da", "-Dbc"), List.of(),
                List.of(), List.of(), "13.0");
        Inputs swapped = new Inputs("s", "p.cu", CompileTarget.Kind.PTX, 9, 0, List.of("-Dc", "-Dab"), List.of(),
                List.of(), List.of(), "13.0");
        assertNotEquals(CacheKey.of(ab.request()), CacheKey.of(shifted.request()));
        assertNotEquals(CacheKey.of(ab.request()), CacheKey.of(swapped.request()));
    }

    /**
     * Pins the encoding: a key that changes between Gatun versions silently orphans every cache
     * entry (or worse, if the encoding became ambiguous). Change the ENCODING tag and this value
     * together, on purpose. The value was computed outside Java, by hashing the documented
     * encoding (big-endian int lengths, UTF-8 bytes, the fields in CacheKey's order; the user
     * include directory, which does not exist, as IncludeDirectoryContent's digest of an absent
     * directory) with Python's hashlib.
     */
    @Example
    void theEncodingIsPinned() throws IOException {
        Inputs fixed = new Inputs("__global__ void k() {}", "k.cu", CompileTarget.Kind.CUBIN, 9, 0,
                List.of("-std=c++17"), List.of("/user/include"), List.of("/usr/local/cuda/include"),
                List.of("&k"), "13.0");
        assertEquals("ddb8ca89877af4053ffb061d9ef20463f39837160bbd079a660a7f66e9a6e0c2", CacheKey.of(fixed.request()));
    }
}
