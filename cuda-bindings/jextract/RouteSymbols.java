import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The step {@code regenerate} runs right after jextract: makes the generated functions resolve
 * their symbols through {@code dev.gatun.cuda.bindings.NativeLibrary} (the library Gatun's
 * runtime opened) instead of {@code SymbolLookup.loaderLookup()}, which sees only libraries
 * that the same class loader registered with {@code System.load}: Gatun never does, so every
 * generated call would fail with ExceptionInInitializerError. jextract has no option for this
 * ({@code -l} opens a fixed library when the header class is loaded).
 *
 * <pre>java RouteSymbols.java DRIVER|NVRTC|package.Class.CONSTANT GENERATED_PACKAGE_DIR</pre>
 *
 * In every {@code .java} file of the directory it rewrites, and touches nothing else:
 * <ul>
 * <li>the {@code SYMBOL_LOOKUP} initializer, to {@code NativeLibrary.X.lookup()};</li>
 * <li>each function holder's {@code ADDR} and {@code HANDLE}: the {@code ADDR} field goes (a
 *     static initializer cannot report a missing library without ExceptionInInitializerError) and
 *     {@code HANDLE} becomes {@code NativeLibrary.X.downcall(name, DESC)}, a handle that opens the
 *     library on its first call and throws from that call when it cannot;</li>
 * <li>each {@code name$address()} body, to {@code NativeLibrary.X.address(name)}, which throws from
 *     the call likewise.</li>
 * </ul>
 * It matches jextract's output line for line, is idempotent (rewritten files match nothing), and
 * stops with a message when a file still names {@code loaderLookup}, {@code findOrThrow} or a
 * holder's {@code ADDR} afterwards, so that a jextract whose output changed shape fails here.
 */
public final class RouteSymbols {

    private static final String SYMBOL_LOOKUP = """
                static final SymbolLookup SYMBOL_LOOKUP = SymbolLookup.loaderLookup()
                        .or(Linker.nativeLinker().defaultLookup());
            """;
    /** A library of another module's bindings: an enum constant, named with its class. */
    private static final Pattern QUALIFIED = Pattern.compile("(\\w+\\.)+[A-Z][A-Z0-9_]*");
    private static final Pattern HOLDER = Pattern.compile("^    private static class (\\w+) \\{$");
    private static final Pattern ADDR = Pattern.compile(
            "^        public static final MemorySegment ADDR = SYMBOL_LOOKUP\\.findOrThrow\\(\"(\\w+)\"\\);$");
    private static final String HANDLE =
            "        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);";
    private static final Pattern ADDRESS_READ = Pattern.compile("^        return (\\w+)\\.ADDR;$");
    /** What no rewritten file may still contain. */
    private static final List<String> LEFTOVERS = List.of("loaderLookup", "findOrThrow", ".ADDR", " ADDR =",
            "downcallHandle(ADDR");

    public static void main(String[] args) throws IOException {
        if (args.length != 2 || !(List.of("DRIVER", "NVRTC").contains(args[0]) || QUALIFIED.matcher(args[0]).matches())) {
            System.err.println("usage: java RouteSymbols.java DRIVER|NVRTC|package.Class.CONSTANT GENERATED_PACKAGE_DIR");
            System.exit(64);
        }
        // DRIVER and NVRTC are NativeLibrary's; another module's bindings (gatun-blas) name a
        // constant of their own with the same lookup(), downcall(name, descriptor) and address(name).
        String library = args[0].contains(".") ? args[0] : "dev.gatun.cuda.bindings.NativeLibrary." + args[0];
        List<Path> files;
        try (Stream<Path> s = Files.list(Path.of(args[1]))) {
            files = s.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
        for (Path file : files) {
            String text = Files.readString(file, StandardCharsets.UTF_8);
            String routed = route(text, library, file);
            for (String leftover : LEFTOVERS) {
                if (routed.contains(leftover)) {
                    fail(file + " still contains '" + leftover + "' after routing: jextract's output changed "
                            + "shape; update RouteSymbols.java");
                }
            }
            if (!routed.equals(text)) {
                Files.writeString(file, routed, StandardCharsets.UTF_8);
            }
        }
    }

    private static String route(String text, String library, Path file) {
        // Line by line: each holder's symbol (its ADDR line) is known before its HANDLE line and
        // its $address() accessor, which jextract writes after the holder.
        String[] lines = text.split("\n", -1);
        StringBuilder out = new StringBuilder(text.length());
        Map<String, String> symbolOfHolder = new HashMap<>();
        String holder = null;
        String symbol = null;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            Matcher m;
            if ((m = HOLDER.matcher(line)).matches()) {
                holder = m.group(1);
                symbol = null;
            } else if ((m = ADDR.matcher(line)).matches()) {
                if (holder == null || i + 2 >= lines.length || !lines[i + 1].isEmpty() || !lines[i + 2].equals(HANDLE)) {
                    fail(file + ":" + (i + 1) + ": an ADDR line outside the holder shape jextract writes");
                }
                symbol = m.group(1);
                symbolOfHolder.put(holder, symbol);
                // The ADDR line and the blank line after it go; the HANDLE line is next.
                i++;
                continue;
            } else if (line.equals(HANDLE)) {
                if (symbol == null) {
                    fail(file + ":" + (i + 1) + ": a HANDLE line without its holder's ADDR line");
                }
                line = "        public static final MethodHandle HANDLE = " + library + ".downcall(\"" + symbol
                        + "\", DESC);";
            } else if ((m = ADDRESS_READ.matcher(line)).matches()) {
                String of = symbolOfHolder.get(m.group(1));
                if (of == null) {
                    fail(file + ":" + (i + 1) + ": " + m.group(1) + ".ADDR read, but no holder of that name");
                }
                line = "        return " + library + ".address(\"" + of + "\");";
            }
            out.append(line);
            if (i + 1 < lines.length) {
                out.append('\n');
            }
        }
        // Last, so that the line numbers of messages above are jextract's.
        return out.toString().replace(SYMBOL_LOOKUP,
                "    static final SymbolLookup SYMBOL_LOOKUP = " + library + ".lookup();\n");
    }

    private static void fail(String message) {
        System.err.println("RouteSymbols: " + message);
        System.exit(1);
    }
}
