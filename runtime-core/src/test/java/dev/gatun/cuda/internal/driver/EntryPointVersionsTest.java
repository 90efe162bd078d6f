package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The version driver.functions gives each function is the one of its own prototype, as the CUDA
 * toolkit's {@code cudaTypedefs.h} names them ({@code PFN_cuMemAlloc_v3020} for
 * {@code cuMemAlloc_v2}): {@code cuGetProcAddress_v2} returns the variant of the version it is
 * asked for, so a wrong version binds a function of another prototype (cuda.h's
 * {@code cuCtxSynchronize} is CUDA 2.0's, its {@code cuCtxSynchronize_v2} 13.0's). A function
 * without a suffix is the first variant, {@code _vN} the Nth, and the variant must take as many
 * parameters as the generated binding (the typedefs name some of them otherwise). NVIDIA's headers are not part of Gatun: this runs where a toolkit is
 * installed ({@code $CUDA_HOME/include}, else {@code /usr/local/cuda/include}), as on the GPU
 * host and the development machines, and is skipped, saying so, elsewhere.
 */
class EntryPointVersionsTest {

    private static final Pattern PFN = Pattern.compile(
            "typedef\\s+CUresult\\s*\\(\\s*CUDAAPI\\s*\\*\\s*PFN_(\\w+?)_v(\\d+)(_ptsz|_ptds)?\\s*\\)\\s*\\(([^)]*)\\)");
    private static final Pattern BINDING = Pattern.compile("public static int (cu\\w+)\\(([^)]*)\\) \\{");
    private static final Pattern SUFFIX = Pattern.compile("^(\\w+?)_v(\\d+)$");
    private static final Path GENERATED = Path.of("../cuda-bindings/src/main/generated/dev/gatun/cuda/bindings/driver");

    private static Optional<Path> typedefs() {
        List<String> homes = new ArrayList<>();
        for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
            String home = System.getenv(variable);
            if (home != null && !home.isBlank()) {
                homes.add(home.strip());
            }
        }
        homes.add("/usr/local/cuda");
        return homes.stream().map(h -> Path.of(h, "include", "cudaTypedefs.h")).filter(Files::isRegularFile).findFirst();
    }

    @Test
    void eachFunctionAsksForTheVersionOfItsOwnPrototype() throws IOException {
        Optional<Path> header = typedefs();
        Assumptions.assumeTrue(header.isPresent(), "no cudaTypedefs.h in $CUDA_HOME/include or /usr/local/cuda/include: "
                + "the versions of driver.functions are checked where a CUDA toolkit is installed");
        // Per base name, its variants (legacy-stream ones) by version, each with its parameter names.
        Map<String, TreeMap<Integer, List<String>>> variants = new HashMap<>();
        Matcher m = PFN.matcher(Files.readString(header.get()));
        while (m.find()) {
            if (m.group(3) == null) {
                variants.computeIfAbsent(m.group(1), k -> new TreeMap<>()).put(Integer.parseInt(m.group(2)),
                        names(m.group(4)));
            }
        }
        Map<String, List<String>> bindings = bindings();
        List<String> wrong = new ArrayList<>();
        for (DriverFunction f : DriverFunction.values()) {
            Matcher suffix = SUFFIX.matcher(f.name());
            String base = suffix.matches() ? suffix.group(1) : f.name();
            int nth = suffix.matches() ? Integer.parseInt(suffix.group(2)) : 1;
            List<Integer> versions = new ArrayList<>(variants.getOrDefault(base, new TreeMap<>()).keySet());
            if (versions.size() < nth) {
                wrong.add(f + ": cudaTypedefs.h has " + versions.size() + " variant(s) of " + base);
                continue;
            }
            int version = versions.get(nth - 1);
            if (version != f.version()) {
                wrong.add(f + " is variant " + nth + " of " + base + ": PFN_" + base + "_v" + version + ", not "
                        + f.version());
            }
            List<String> parameters = variants.get(base).get(version);
            if (parameters.size() != bindings.get(f.binding()).size()) {
                wrong.add(f + ": PFN_" + base + "_v" + version + " takes " + parameters + ", its binding "
                        + f.binding() + " " + bindings.get(f.binding()));
            }
        }
        assertEquals(List.of(), wrong, "driver.functions against " + header.get());
    }

    /** The generated bindings' parameter names, by function. */
    private static Map<String, List<String>> bindings() throws IOException {
        Map<String, List<String>> found = new HashMap<>();
        try (Stream<Path> files = Files.list(GENERATED)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("CudaDriver")).toList()) {
                Matcher m = BINDING.matcher(Files.readString(f));
                while (m.find()) {
                    found.putIfAbsent(m.group(1), names(m.group(2)));
                }
            }
        }
        return found;
    }

    /** The parameter names of a C or Java parameter list: the last word of each ({@code void} is none). */
    private static List<String> names(String parameters) {
        String p = parameters.strip();
        if (p.isEmpty() || p.equals("void")) {
            return List.of();
        }
        return Arrays.stream(p.split(",")).map(s -> {
            String[] words = s.strip().replaceAll("[*\\[\\]]", " ").strip().split("\\s+");
            return words[words.length - 1];
        }).toList();
    }
}
