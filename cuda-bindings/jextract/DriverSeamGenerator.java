import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Build-time generator of Gatun's driver seam: from the list of driver functions Gatun calls
 * (driver.functions: each with the CUDA version of its entry point) and the jextract bindings'
 * signatures, writes, in {@code dev.gatun.cuda.internal.driver}, {@code DriverFunction} (the list
 * as an enum: each function's entry point and version), {@code DriverApi} (the interface),
 * {@code NativeDriverApi} (one lazily bound downcall per function, see {@code EntryPointBinder})
 * {@code AttributedDriverApi} (the decorator that tells the driver's error log when each call
 * returns) and {@code ForwardingDriverApi} (a decorator to subclass: every call goes to the
 * driver behind unless the subclass overrides it). runtime-core's build runs it in generate-sources:
 *
 * <pre>java DriverSeamGenerator.java FUNCTIONS GENERATED_BINDINGS_DIR OUTPUT_DIR</pre>
 *
 * A function in the list without a generated binding, or a line it cannot read, stops the build
 * with its name.
 */
public final class DriverSeamGenerator {

    private static final Pattern BINDING = Pattern.compile("public static int (cu\\w+)\\(([^)]*)\\) \\{");
    private static final Pattern SUFFIX = Pattern.compile("_v\\d+$");
    private static final String PACKAGE = "dev.gatun.cuda.internal.driver";

    /**
     * One line of driver.functions.
     *
     * @param name the function, as DriverApi names it
     * @param binding the generated binding whose prototype it has (its own name, unless the line says {@code like})
     * @param parameters that binding's parameter list, as jextract wrote it
     * @param section the comment above it in the list
     * @param version the CUDA version of its entry point
     * @param byName whether it is found by name in the library (dlsym) rather than through cuGetProcAddress_v2
     */
    private record Function(String name, String binding, String parameters, String section, int version,
            boolean byName) {
        /** What the driver is asked for: the exported symbol when found by name, else the base name (no _vN). */
        String symbol() {
            return byName ? name : SUFFIX.matcher(name).replaceFirst("");
        }

        /** The downcall's {@code MethodType} arguments: {@code int.class}, then each parameter's class. */
        String methodTypeArguments() {
            StringBuilder types = new StringBuilder("int.class");
            if (!parameters.isBlank()) {
                for (String p : parameters.split(",")) {
                    String[] typeAndName = p.trim().split("\\s+");
                    types.append(", ").append(typeAndName[0]).append(".class");
                }
            }
            return types.toString();
        }

        String arguments() {
            if (parameters.isBlank()) {
                return "";
            }
            List<String> names = new ArrayList<>();
            for (String p : parameters.split(",")) {
                String[] typeAndName = p.trim().split("\\s+");
                names.add(typeAndName[typeAndName.length - 1]);
            }
            return String.join(", ", names);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: java DriverSeamGenerator.java FUNCTIONS GENERATED_BINDINGS_DIR OUTPUT_DIR");
            System.exit(64);
        }
        Map<String, String> signatures = signatures(Path.of(args[1]));
        List<Function> functions = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        String section = "";
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            String t = line.strip();
            if (t.startsWith("#")) {
                section = t.substring(1).strip();
            } else if (!t.isEmpty()) {
                Function f = function(t, section, signatures, problems);
                if (f != null) {
                    functions.add(f);
                }
            }
        }
        if (!problems.isEmpty()) {
            System.err.println("DriverSeamGenerator: " + String.join("; ", problems));
            System.exit(1);
        }
        Path out = Path.of(args[2], PACKAGE.replace('.', '/'));
        Files.createDirectories(out);
        write(out.resolve("DriverFunction.java"), functionEnum(functions));
        write(out.resolve("DriverApi.java"), api(functions));
        write(out.resolve("NativeDriverApi.java"), nativeApi(functions));
        write(out.resolve("AttributedDriverApi.java"), attributedApi(functions));
        write(out.resolve("ForwardingDriverApi.java"), forwardingApi(functions));
    }

    /** A line {@code FUNCTION VERSION [by-name] [like BINDING]}, or null after adding what is wrong with it to {@code problems}. */
    private static Function function(String line, String section, Map<String, String> signatures, List<String> problems) {
        String[] words = line.split("\\s+");
        String name = words[0];
        int version;
        try {
            version = words.length > 1 ? Integer.parseInt(words[1]) : -1;
        } catch (NumberFormatException e) {
            version = -1;
        }
        if (version < 2000) {
            problems.add("'" + line + "' has no CUDA version (1000 * major + 10 * minor) after the function");
            return null;
        }
        boolean byName = false;
        String binding = name;
        for (int i = 2; i < words.length; i++) {
            if (words[i].equals("by-name")) {
                byName = true;
            } else if (words[i].equals("like") && i + 1 < words.length) {
                binding = words[++i];
            } else {
                problems.add("'" + line + "': '" + words[i] + "' is neither by-name nor like BINDING");
                return null;
            }
        }
        String parameters = signatures.get(binding);
        if (parameters == null) {
            problems.add("no jextract binding for " + binding + "; add the symbol to driver.symbols and regenerate "
                    + "the bindings");
            return null;
        }
        return new Function(name, binding, parameters, section, version, byName);
    }

    private static Map<String, String> signatures(Path generated) throws IOException {
        Map<String, String> found = new LinkedHashMap<>();
        try (Stream<Path> files = Files.walk(generated)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                Matcher m = BINDING.matcher(Files.readString(f, StandardCharsets.UTF_8));
                while (m.find()) {
                    found.putIfAbsent(m.group(1), m.group(2));
                }
            }
        }
        return found;
    }

    /** Writes only when the text changed, so an unchanged seam does not recompile runtime-core. */
    private static void write(Path file, String text) throws IOException {
        if (Files.exists(file) && Files.readString(file, StandardCharsets.UTF_8).equals(text)) {
            return;
        }
        Files.writeString(file, text, StandardCharsets.UTF_8);
    }

    private static String header() {
        return "// Generated by cuda-bindings/jextract/DriverSeamGenerator.java from driver.functions. Do not edit.\n"
                + "package " + PACKAGE + ";\n\n";
    }

    private static String functionEnum(List<Function> functions) {
        StringBuilder sb = new StringBuilder(header());
        sb.append("""
                /**
                 * The CUDA driver functions Gatun calls (cuda-bindings/jextract/driver.functions), each with the
                 * entry point {@link NativeDriverApi} binds it to on its first call: the name the driver is asked
                 * for, and the CUDA version of that entry point ({@code 1000 * major + 10 * minor}), which is
                 * also the oldest driver that has it. {@link EntryPoints} asks the driver for it;
                 * {@link DriverFeature} says which feature each serves.
                 */
                public enum DriverFunction {
                """);
        String section = null;
        for (int i = 0; i < functions.size(); i++) {
            Function f = functions.get(i);
            if (!f.section().equals(section)) {
                section = f.section();
                sb.append("\n    // ").append(section).append('\n');
            }
            sb.append("    ").append(f.name()).append("(\"").append(f.symbol()).append("\", ").append(f.version())
                    .append(", ").append(f.byName()).append(", \"").append(f.binding()).append("\")")
                    .append(i + 1 < functions.size() ? ",\n" : ";\n");
        }
        sb.append("""

                    private final String symbol;
                    private final int version;
                    private final boolean byName;
                    private final String binding;

                    DriverFunction(String symbol, int version, boolean byName, String binding) {
                        this.symbol = symbol;
                        this.version = version;
                        this.byName = byName;
                        this.binding = binding;
                    }

                    /**
                     * {@return what the driver is asked for: the base name that {@code cuGetProcAddress_v2} takes
                     * ({@code cuMemAlloc} for {@code cuMemAlloc_v2}), or the exported symbol of a function found
                     * {@linkplain #byName() by name}}
                     */
                    public String symbol() {
                        return symbol;
                    }

                    /**
                     * {@return the CUDA version of the entry point, e.g. 12040 for 12.4: what
                     * {@code cuGetProcAddress_v2} is asked for, so that it returns the variant with this
                     * function's prototype, and the oldest driver that has it}
                     */
                    public int version() {
                        return version;
                    }

                    /**
                     * {@return whether the function is found by name in the library ({@code dlsym}) instead of
                     * through {@code cuGetProcAddress_v2}: the few that run before Gatun knows the driver has it}
                     */
                    public boolean byName() {
                        return byName;
                    }

                    /** {@return the generated binding whose prototype the function has: its own name, but for a {@code like} line} */
                    public String binding() {
                        return binding;
                    }
                }
                """);
        return sb.toString();
    }

    private static String api(List<Function> functions) {
        StringBuilder sb = new StringBuilder(header());
        sb.append("""
                import java.lang.foreign.MemorySegment;

                /**
                 * The CUDA driver functions Gatun calls ({@link DriverFunction}), with the generated bindings'
                 * exact signatures: pointers and handles as {@link MemorySegment}, {@code CUdeviceptr} and
                 * {@code size_t} as {@code long}, enums and flags as {@code int}; every method returns the raw
                 * {@code CUresult}.
                 *
                 * <p>The seam between layer 1 ({@link NativeDriverApi}) and layer 2 ({@link Checked}): tests put
                 * a simulated driver, or a fault-injecting decorator, behind it. Nothing here checks a result. A
                 * function the driver lacks (one newer than it) throws {@link dev.gatun.cuda.DriverTooOldException}
                 * from its call; {@link Driver#require} tells before.
                 */
                public interface DriverApi {
                """);
        String section = null;
        for (Function f : functions) {
            if (!f.section().equals(section)) {
                section = f.section();
                sb.append("\n    // ").append(section).append('\n');
            }
            sb.append("    int ").append(f.name()).append('(').append(f.parameters()).append(");\n");
        }
        return sb.append("}\n").toString();
    }

    private static String nativeApi(List<Function> functions) {
        StringBuilder sb = new StringBuilder(header());
        sb.append("""
                import dev.gatun.cuda.bindings.driver.CudaDriver;
                import dev.gatun.cuda.internal.load.Downcalls;
                import java.lang.foreign.MemorySegment;
                import java.lang.foreign.SymbolLookup;
                import java.lang.invoke.MethodHandle;
                import java.lang.invoke.MethodType;
                import java.lang.invoke.MutableCallSite;
                import java.util.concurrent.atomic.AtomicBoolean;

                /**
                 * Layer 1 behind the {@link DriverApi} seam: each method is one downcall, nothing else.
                 *
                 * <p>Each function is bound on its first call, by {@link EntryPointBinder}: through
                 * {@code cuGetProcAddress_v2} with the version of its entry point ({@link DriverFunction}), in
                 * the driver library this instance was made for; a driver that lacks it fails that call, and
                 * only it, with {@link dev.gatun.cuda.DriverTooOldException}. The first instance of a class
                 * loader (the system driver's; each class loader that loads Gatun makes its own over the same
                 * mapped driver) binds one static call site per function: the JIT treats a static final handle,
                 * and the target of a call site reached through one, as a constant, so that once bound a call
                 * inlines the downcall as a handle made at once would, while a handle read from an instance
                 * field is called through the generic invoker, a few nanoseconds more on every driver call.
                 * Later instances (tests over other libraries) bind call sites of their own. Either way a warmed
                 * call is one {@code invokeExact}, which allocates nothing.
                 *
                 * <p>Safety: every descriptor is the one jextract generated from {@code cuda.h}, and the address
                 * it is bound to is the one the driver returned for that prototype's version. Every pointer
                 * argument is a segment that the calling owner keeps alive for the call (or, for asynchronous
                 * work, until its completion evidence is complete); that argument is made where each call is
                 * made, in layer 2.
                 */
                final class NativeDriverApi implements DriverApi {

                    /** Set by the first instance, which binds the call sites below. */
                    private static final AtomicBoolean SITES_TAKEN = new AtomicBoolean();

                    /** Whether this instance bound the static call sites: its calls go through them. */
                    private final boolean bound;
                """);
        for (Function f : functions) {
            sb.append("    private final MethodHandle ").append(f.name()).append(";\n");
        }
        sb.append('\n');
        for (Function f : functions) {
            sb.append("    private static final MutableCallSite ").append(f.name()).append("$site = new MutableCallSite(\n")
                    .append("            MethodType.methodType(").append(f.methodTypeArguments()).append("));\n")
                    .append("    private static final MethodHandle ").append(f.name()).append("$bound = ")
                    .append(f.name()).append("$site.dynamicInvoker();\n");
        }
        sb.append("""

                    /**
                     * Binds nothing yet: each function is bound on its first call.
                     *
                     * @param symbols the opened driver library
                     * @param library where it was loaded from, for messages
                     */
                    NativeDriverApi(SymbolLookup symbols, String library) {
                        EntryPointBinder binder = new EntryPointBinder(
                                new Downcalls(CudaDriver.class, symbols, library, ByValueStructs.DRIVER), this);
                        bound = SITES_TAKEN.compareAndSet(false, true);
                """);
        for (Function f : functions) {
            sb.append("        ").append(f.name()).append(" = binder.lazy(DriverFunction.").append(f.name())
                    .append(", bound ? ").append(f.name()).append("$site : null);\n");
        }
        sb.append("""
                        if (bound) {
                            // Once per class loader, before this instance is handed to anyone; syncAll publishes
                            // the targets to every thread.
                            MutableCallSite.syncAll(new MutableCallSite[] {
                """);
        for (int i = 0; i < functions.size(); i++) {
            sb.append("                    ").append(functions.get(i).name()).append("$site")
                    .append(i + 1 < functions.size() ? ",\n" : "});\n");
        }
        sb.append("""
                        }
                    }
                """);
        for (Function f : functions) {
            sb.append("\n    @Override\n    public int ").append(f.name()).append('(').append(f.parameters()).append(") {\n")
                    .append("        try {\n")
                    .append("            return bound ? (int) ").append(f.name()).append("$bound.invokeExact(")
                    .append(f.arguments()).append(")\n")
                    .append("                    : (int) ").append(f.name()).append(".invokeExact(").append(f.arguments())
                    .append(");\n")
                    .append("        } catch (Throwable t) {\n")
                    .append("            throw Downcalls.rethrow(t);\n")
                    .append("        }\n")
                    .append("    }\n");
        }
        return sb.append("}\n").toString();
    }

    private static String attributedApi(List<Function> functions) {
        StringBuilder sb = new StringBuilder(header());
        sb.append("""
                import java.lang.foreign.MemorySegment;

                /**
                 * The {@link DriverApi} that {@link Checked} calls when the driver keeps an error log: each
                 * call goes to the driver behind, then tells {@link DriverLog} its result and name as it
                 * returns (also when it throws), so that the lines the driver logged during the call, which
                 * it delivers on the calling thread before the call returns, are the call's. Costs a call
                 * the JIT inlines, a compare and one volatile read while no line is waiting; allocates
                 * nothing.
                 */
                final class AttributedDriverApi implements DriverApi {

                    private final DriverApi next;

                    AttributedDriverApi(DriverApi next) {
                        this.next = next;
                    }
                """);
        for (Function f : functions) {
            sb.append("\n    @Override\n    public int ").append(f.name()).append('(').append(f.parameters()).append(") {\n")
                    .append("        int r = DriverLog.THREW;\n")
                    .append("        try {\n")
                    .append("            r = next.").append(f.name()).append('(').append(f.arguments()).append(");\n")
                    .append("            return r;\n")
                    .append("        } finally {\n")
                    .append("            DriverLog.returned(r, \"").append(f.name()).append("\");\n")
                    .append("        }\n")
                    .append("    }\n");
        }
        return sb.append("}\n").toString();
    }

    private static String forwardingApi(List<Function> functions) {
        StringBuilder sb = new StringBuilder(header());
        sb.append("""
                import java.lang.foreign.MemorySegment;

                /**
                 * A {@link DriverApi} that hands every call to the driver behind it, for a subclass to
                 * override the few calls it changes (gatun-bench's {@code InstantDriver} answers an
                 * operation's calls at once, over the simulated driver). A plain class, not a proxy: a call
                 * costs a field read and a call the JIT inlines, and allocates nothing.
                 */
                public abstract class ForwardingDriverApi implements DriverApi {

                    /** The driver every call not overridden goes to. */
                    protected final DriverApi next;

                    protected ForwardingDriverApi(DriverApi next) {
                        this.next = java.util.Objects.requireNonNull(next, "next");
                    }
                """);
        for (Function f : functions) {
            sb.append("\n    @Override\n    public int ").append(f.name()).append('(').append(f.parameters()).append(") {\n")
                    .append("        return next.").append(f.name()).append('(').append(f.arguments()).append(");\n")
                    .append("    }\n");
        }
        return sb.append("}\n").toString();
    }
}
