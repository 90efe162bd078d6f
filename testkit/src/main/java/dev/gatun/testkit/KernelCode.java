package dev.gatun.testkit;

import dev.gatun.cuda.testing.Ptx;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A kernel's real code: what a real GPU runs. CUDA C++ source is compiled with Gatun's NVRTC
 * API for the device; PTX is loaded as it is. The simulated GPU runs the kernel's
 * {@link JavaKernel} instead, and reads from this code only the kernel's parameters (their
 * count and sizes), so that Gatun checks a launch's arguments against them on both targets.
 */
public final class KernelCode {

    /**
     * {@code extern "C" __global__ void name(parameters)}, with an optional
     * {@code __launch_bounds__(...)} before the name.
     */
    private static final Pattern DECLARATION = Pattern.compile(
            "extern\\s+\"C\"\\s+__global__\\s+void\\s+(?:__launch_bounds__\\s*\\([^)]*\\)\\s*)?(\\w+)\\s*\\(([^)]*)\\)");
    /** Words that do not change a parameter's size. */
    private static final Pattern QUALIFIERS = Pattern.compile(
            "\\b(?:const|volatile|__restrict__|__restrict|restrict|signed|unsigned)\\b");
    /** The PTX type of each scalar C type a kernel parameter can have, by its size. */
    private static final Map<String, String> SCALARS = Map.ofEntries(
            Map.entry("", "u32"), // what is left of a plain "unsigned"
            Map.entry("int", "u32"), Map.entry("int32_t", "u32"), Map.entry("uint32_t", "u32"),
            Map.entry("float", "f32"), Map.entry("double", "f64"),
            Map.entry("long", "u64"), Map.entry("long int", "u64"), Map.entry("long long", "u64"),
            Map.entry("long long int", "u64"), Map.entry("int64_t", "u64"), Map.entry("uint64_t", "u64"),
            Map.entry("size_t", "u64"), Map.entry("ptrdiff_t", "u64"), Map.entry("intptr_t", "u64"),
            Map.entry("uintptr_t", "u64"),
            Map.entry("short", "u16"), Map.entry("short int", "u16"), Map.entry("int16_t", "u16"),
            Map.entry("uint16_t", "u16"), Map.entry("__half", "u16"), Map.entry("half", "u16"),
            Map.entry("__nv_bfloat16", "u16"),
            Map.entry("char", "u8"), Map.entry("bool", "u8"), Map.entry("int8_t", "u8"), Map.entry("uint8_t", "u8"));

    private final boolean ptx;
    private final String text;
    private final List<Path> includeDirectories;

    private KernelCode(boolean ptx, String text, List<Path> includeDirectories) {
        this.ptx = ptx;
        this.text = Objects.requireNonNull(text, "text");
        this.includeDirectories = List.copyOf(includeDirectories);
    }

    /**
     * CUDA C++ source holding the kernel as {@code extern "C" __global__ void name(...)}: unmangled,
     * so that its name is the one the test asks for. Its parameters must be pointers or scalars
     * ({@code int}, {@code float}, {@code double}, {@code long long}, {@code size_t}, ... and their
     * {@code unsigned} forms): the simulator sizes them from the declaration. A kernel with
     * parameters of other types (structs, templates) can be given as PTX.
     *
     * @param source the CUDA C++ source
     * @param includeDirectories directories NVRTC searches for {@code #include}s, e.g.
     *     {@code CudaGraphs.latchIncludeDirectory()}
     * @return the code
     */
    public static KernelCode cuda(String source, Path... includeDirectories) {
        return new KernelCode(false, source, List.of(includeDirectories));
    }

    /**
     * PTX text holding the kernel as a {@code .entry}. The simulator reads the entry's
     * {@code .param} lines for the parameters' sizes.
     *
     * @param ptx the PTX text
     * @return the code
     */
    public static KernelCode ptx(String ptx) {
        return new KernelCode(true, ptx, List.of());
    }

    /** {@return whether this is PTX (else CUDA C++ source)} */
    public boolean isPtx() {
        return ptx;
    }

    /** {@return the source or PTX text} */
    public String text() {
        return text;
    }

    /** {@return the directories NVRTC searches for includes (none for PTX)} */
    public List<Path> includeDirectories() {
        return includeDirectories;
    }

    /**
     * The PTX the simulator loads for {@code kernel}: this PTX itself, or for CUDA source, a PTX
     * entry with the declaration's parameters (the simulator reads nothing else of a module).
     *
     * @throws IllegalArgumentException when the source declares no such kernel, or a parameter
     *     the simulator cannot size
     */
    String simulatedPtx(String kernel) {
        if (ptx) {
            return text;
        }
        Matcher m = DECLARATION.matcher(text);
        while (m.find()) {
            if (m.group(1).equals(kernel)) {
                return Ptx.module(kernel, parameterTypes(kernel, m.group(2)));
            }
        }
        throw new IllegalArgumentException("the CUDA source declares no extern \"C\" __global__ void " + kernel
                + "(...): write the kernel so (the simulator reads its parameters from that declaration, and only "
                + "extern \"C\" keeps the name NVRTC gives it the one asked for)");
    }

    private static String[] parameterTypes(String kernel, String parameters) {
        if (parameters.isBlank() || parameters.strip().equals("void")) {
            return new String[0];
        }
        List<String> types = new ArrayList<>();
        for (String parameter : parameters.split(",")) {
            types.add(ptxType(kernel, parameter.strip()));
        }
        return types.toArray(String[]::new);
    }

    private static String ptxType(String kernel, String parameter) {
        if (parameter.contains("*")) {
            return "u64";
        }
        Matcher qualifiers = QUALIFIERS.matcher(parameter);
        boolean signed = qualifiers.results().anyMatch(q -> q.group().endsWith("signed"));
        String[] words = qualifiers.replaceAll(" ").strip().split("\\s+");
        // The last word is the parameter's name, unless the words are a type and nothing else
        // ("int", "long long", or "" where "unsigned" was); a lone "unsigned" or "signed" is an int.
        String whole = String.join(" ", words);
        String type;
        if (SCALARS.containsKey(whole)) {
            type = whole;
        } else if (words.length > 1) {
            type = String.join(" ", List.of(words).subList(0, words.length - 1));
        } else {
            type = signed ? "" : whole;
        }
        String ptxType = SCALARS.get(type);
        if (ptxType == null) {
            throw new IllegalArgumentException("kernel " + kernel + "'s parameter '" + parameter + "' is neither a "
                    + "pointer nor a scalar the simulator can size; give the kernel as PTX (KernelCode.ptx), whose "
                    + ".param lines give every parameter's size");
        }
        return ptxType;
    }

    @Override
    public String toString() {
        return (ptx ? "PTX (" : "CUDA source (") + text.length() + " characters)";
    }
}
