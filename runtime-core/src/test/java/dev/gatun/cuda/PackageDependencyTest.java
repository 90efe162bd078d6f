package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.NativeResource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Enforces the package map at the top of runtime-core/README.md on the main sources: every
 * package is on the map, depends only on what the map lets it, and no packages form a cycle.
 * Internal packages are keyed on internal types: of the public packages they use only the API
 * values listed in {@link #API_VALUES} and the API's exceptions. The public packages hold only
 * API. Dependencies are read from the code (imports and qualified names), not from comments.
 */
class PackageDependencyTest {

    private static final Path MAIN = Path.of("src/main/java");
    private static final String API = "dev.gatun.cuda";
    private static final String NVRTC = "dev.gatun.cuda.nvrtc";
    private static final String DOCTOR = "dev.gatun.cuda.doctor";
    private static final String NVTX = "dev.gatun.cuda.nvtx";
    private static final String INTERNAL = "dev.gatun.cuda.internal.";
    private static final String CONTEXT = INTERNAL + "context";
    private static final String DRIVER = INTERNAL + "driver";
    private static final String EVENTS = INTERNAL + "events";
    private static final String GRAPH = INTERNAL + "graph";
    private static final String IMAGE = INTERNAL + "image";
    private static final String LAUNCH = INTERNAL + "launch";
    private static final String LOAD = INTERNAL + "load";
    private static final String MEMORY = INTERNAL + "memory";
    private static final String INTERNAL_NVRTC = INTERNAL + "nvrtc";
    private static final String INTERNAL_NVTX = INTERNAL + "nvtx";
    private static final String POOL = INTERNAL + "pool";
    private static final String SETTINGS = INTERNAL + "settings";
    private static final String TRANSFER = INTERNAL + "transfer";
    private static final String BINDINGS_LIBRARIES = "dev.gatun.cuda.bindings";
    private static final String BINDINGS_DRIVER = "dev.gatun.cuda.bindings.driver";
    private static final String BINDINGS_NVRTC = "dev.gatun.cuda.bindings.nvrtc";

    /** Each package of runtime-core and the packages it may depend on: the README's map. */
    private static final Map<String, Set<String>> MAP = Map.ofEntries(
            Map.entry(DOCTOR, Set.of(API, NVRTC)),
            Map.entry(API, Set.of(CONTEXT, DRIVER, EVENTS, GRAPH, IMAGE, LAUNCH, MEMORY, POOL, SETTINGS, TRANSFER,
                    INTERNAL_NVTX, BINDINGS_DRIVER)),
            Map.entry(NVTX, Set.of(INTERNAL_NVTX)),
            // The graph wing: on top of internal/, under the graph faces alone.
            Map.entry(GRAPH, Set.of(CONTEXT, DRIVER, EVENTS, LAUNCH, MEMORY, INTERNAL_NVTX, BINDINGS_DRIVER)),
            Map.entry(MEMORY, Set.of(CONTEXT, DRIVER, EVENTS, POOL, INTERNAL_NVTX, BINDINGS_DRIVER)),
            Map.entry(NVRTC, Set.of(API, EVENTS, INTERNAL_NVRTC, LOAD, SETTINGS, BINDINGS_LIBRARIES, BINDINGS_DRIVER)),
            Map.entry(TRANSFER, Set.of(CONTEXT, DRIVER, EVENTS, MEMORY)),
            Map.entry(LAUNCH, Set.of(DRIVER, BINDINGS_DRIVER)),
            Map.entry(POOL, Set.of(CONTEXT, DRIVER, EVENTS, INTERNAL_NVTX, BINDINGS_DRIVER)),
            Map.entry(CONTEXT, Set.of(DRIVER, EVENTS, BINDINGS_DRIVER)),
            Map.entry(INTERNAL_NVRTC, Set.of(LOAD, BINDINGS_NVRTC)),
            Map.entry(DRIVER, Set.of(EVENTS, LOAD, INTERNAL_NVTX, BINDINGS_LIBRARIES, BINDINGS_DRIVER)),
            Map.entry(INTERNAL_NVTX, Set.of(SETTINGS)),
            Map.entry(EVENTS, Set.of()),
            Map.entry(IMAGE, Set.of()),
            Map.entry(LOAD, Set.of(BINDINGS_LIBRARIES)),
            Map.entry(SETTINGS, Set.of()));

    /** The generated bindings (module cuda-bindings): depended on, never depending on runtime-core. */
    private static final Set<String> BINDINGS = Set.of(BINDINGS_LIBRARIES, BINDINGS_DRIVER, BINDINGS_NVRTC);

    /**
     * The public types internal code may use, besides the API's exceptions (which layer 2
     * throws): values that carry no lifecycle (records, enums, immutable descriptions). Never an
     * owner: internal code takes a ContextState, StreamState, NativeResource or an address instead.
     */
    private static final Set<String> API_VALUES = Set.of(
            API + ".CaptureMode",
            API + ".ClusterSchedulingPolicy",
            API + ".CudaVersion",
            API + ".DeviceCapabilities",
            API + ".DevicePoolCounters",
            API + ".DevicePoolOptions",
            API + ".DevicePoolSite",
            API + ".GrowableBufferCounters",
            API + ".ContextCounters",
            API + ".KernelArg",
            API + ".LaunchConfig",
            API + ".MemoryInfo",
            API + ".MemoryPoolCounters",
            API + ".MemoryReport",
            API + ".MemoryUsage",
            API + ".OutOfMemoryCounters",
            API + ".OwnerKind",
            API + ".PoolExportHandle",
            API + ".TransferState",
            NVRTC + ".CompileOptions",
            NVRTC + ".CompileTarget",
            NVRTC + ".CompiledProgram");

    /**
     * Package-private types the public packages may hold: the base class of the public owners
     * (package-private so that only Gatun's owners extend it).
     */
    private static final Set<String> API_PACKAGE_PRIVATE = Set.of(API + ".Owner");

    /**
     * The public files of the graph family: faces over {@code internal.graph}, whose methods check
     * their arguments and call into the wing. None declares a native resource, opens an arena or
     * uses the bindings (issue 35).
     */
    private static final Set<String> GRAPH_FACES = Set.of("CaptureArena", "CapturedWork", "ConditionalHandle",
            "ConditionalNode", "Graph", "GraphExec", "GraphInstaller", "GraphNode", "GraphUpdateReport",
            "GraphUpdateResult", "MemOp", "StreamCapture", "UpdatingExecutable");
    private static final Pattern OPENS_ARENA = Pattern.compile("\\bArena\\s*\\.\\s*of");
    private static final Pattern DECLARES_RESOURCE = Pattern.compile("\\bextends\\s+[\\w.]*\\bNativeResource\\b");

    /** A dependency of one source file on a type (or, for a wildcard import, a package). */
    record Reference(String file, String from, String toPackage, String toType) {

        String target() {
            return toType == null ? toPackage + ".*" : toPackage + "." + toType;
        }
    }

    // A qualified name in code: lower-case package segments, then a type (or * in a wildcard import).
    private static final Pattern QUALIFIED = Pattern.compile(
            "\\bdev\\.gatun\\.cuda((?:\\s*\\.\\s*[a-z_][a-z0-9_]*)*)\\s*\\.\\s*([A-Z][A-Za-z0-9_]*|\\*)");
    private static final Pattern PACKAGE = Pattern.compile("^\\s*package\\s+([a-z0-9_.]+)\\s*;", Pattern.MULTILINE);

    @Test
    void everyPackageIsOnTheMap() {
        Set<String> packages = new TreeSet<>();
        for (String text : mainSources().values()) {
            String p = packageOf(text);
            if (p != null) {
                packages.add(p);
            }
        }
        assertEquals(new TreeSet<>(MAP.keySet()), packages, "a new package goes on the map (here and in "
                + "runtime-core/README.md) with what it owns and what it may depend on; a package gone leaves it");
    }

    @Test
    void eachPackageDependsOnlyOnWhatTheMapAllows() {
        List<String> violations = violations(mainSources());
        assertTrue(violations.isEmpty(), () -> String.join("\n", violations));
    }

    @Test
    void theCorePackageNeverReachesNvrtc() {
        List<String> reaching = new ArrayList<>();
        for (Reference r : references(mainSources())) {
            if (r.from().equals(API) && (r.toPackage().equals(NVRTC) || r.toPackage().equals(INTERNAL_NVRTC))) {
                reaching.add(r.file() + " -> " + r.target());
            }
        }
        assertEquals(List.of(), reaching, "dev.gatun.cuda must not know NVRTC: dev.gatun.cuda.nvrtc builds on it");
    }

    @Test
    void noPackagesFormACycle() {
        assertEquals(List.of(), cycle(graph(references(mainSources()))));
        assertEquals(List.of(), cycle(MAP), "the map itself is layered");
    }

    @Test
    void theApiPackagesHoldOnlyApi() throws ClassNotFoundException {
        List<String> hidden = new ArrayList<>();
        for (Map.Entry<String, String> e : mainSources().entrySet()) {
            String p = packageOf(e.getValue());
            if (!isPublic(p)) {
                continue;
            }
            String file = Path.of(e.getKey()).getFileName().toString();
            if (file.equals("package-info.java")) {
                continue; // the package's comment: no type
            }
            String type = p + "." + file.substring(0, file.length() - ".java".length());
            if (!Modifier.isPublic(Class.forName(type, false, loader()).getModifiers()) && !API_PACKAGE_PRIVATE.contains(type)) {
                hidden.add(type);
            }
        }
        assertEquals(List.of(), hidden, "machinery that is not API lives in an internal package");
    }

    /**
     * Retirement never calls a public owner: no resource (nor a capture's scope, which internal
     * code calls on every use) holds one in a field, so its release and evidence cannot reach one.
     */
    @Test
    void resourcesNeverHoldAPublicOwner() throws ClassNotFoundException {
        List<String> held = new ArrayList<>();
        for (Class<?> c : mainClasses()) {
            if (!NativeResource.class.isAssignableFrom(c) && !CaptureScope.class.isAssignableFrom(c)) {
                continue;
            }
            for (Class<?> k = c; k != null && k != Object.class && k != NativeResource.class; k = k.getSuperclass()) {
                for (Field f : k.getDeclaredFields()) {
                    Class<?> type = f.getType().isArray() ? f.getType().getComponentType() : f.getType();
                    if (isPublic(type.getPackageName()) && !type.isEnum() && !type.isRecord()
                            && !Throwable.class.isAssignableFrom(type) && !NativeResource.class.isAssignableFrom(type)
                            && !API_VALUES.contains(type.getName())) {
                        held.add(k.getName() + "." + f.getName() + ": " + type.getName());
                    }
                }
            }
        }
        assertEquals(List.of(), held, "hold the owner's internal state instead (its ContextState, StreamState, "
                + "NativeResource, pool)");
    }

    @Test
    void theGraphFacesHoldNoMachinery() {
        assertEquals(List.of(), machineryInGraphFaces(mainSources()), "the graph faces check arguments and call "
                + "into internal.graph, which holds the native resources, the arenas and the bindings");
    }

    // ---- the checks catch what they are meant to (on the real sources plus one planted file) ----

    @Test
    void machineryInAGraphFaceIsReported() {
        Map<String, String> sources = withFile("dev/gatun/cuda/GraphExec.java", """
                package dev.gatun.cuda;

                import dev.gatun.cuda.bindings.driver.CudaDriver;
                import dev.gatun.cuda.internal.context.NativeResource;
                import java.lang.foreign.Arena;

                /** Mentions Arena.ofConfined() and extends NativeResource in a comment only. */
                public final class GraphExec {
                    private static final class Resource extends NativeResource {
                    }

                    void update() {
                        try (Arena arena = Arena.ofConfined()) {
                        }
                    }
                }
                """);
        List<String> found = machineryInGraphFaces(sources);
        assertEquals(List.of("dev/gatun/cuda/GraphExec.java declares a native resource",
                "dev/gatun/cuda/GraphExec.java opens an arena", "dev/gatun/cuda/GraphExec.java uses the bindings"),
                found);
    }

    @Test
    void anInternalImportOfAnOwnerIsReported() {
        Map<String, String> sources = withFile("dev/gatun/cuda/internal/context/Planted.java", """
                package dev.gatun.cuda.internal.context;

                import dev.gatun.cuda.CudaContext;
                import dev.gatun.cuda.OwnerKind;
                import dev.gatun.cuda.CudaException;

                final class Planted {
                }
                """);
        List<String> violations = violations(sources);
        assertEquals(1, violations.size(), () -> String.join("\n", violations));
        assertTrue(violations.getFirst().contains("Planted.java") && violations.getFirst().contains("CudaContext"),
                violations.getFirst());
    }

    @Test
    void anInternalPackageUsingTheGraphWingIsReported() {
        Map<String, String> sources = withFile("dev/gatun/cuda/internal/memory/Planted.java", """
                package dev.gatun.cuda.internal.memory;

                import dev.gatun.cuda.internal.graph.Planted;

                final class Planted {
                }
                """);
        List<String> violations = violations(sources);
        assertEquals(1, violations.size(), () -> String.join("\n", violations));
        assertTrue(violations.getFirst().contains("may not depend on dev.gatun.cuda.internal.graph.Planted"),
                violations.getFirst());
    }

    @Test
    void aQualifiedNameCountsInCodeButNotInCommentsOrStrings() {
        Map<String, String> sources = withFile("dev/gatun/cuda/internal/pool/Planted.java", """
                package dev.gatun.cuda.internal.pool;

                /** Mentions {@link dev.gatun.cuda.Stream} in a comment only. */
                final class Planted {
                    // dev.gatun.cuda.Kernel in a line comment
                    String text = "dev.gatun.cuda.Event in a string";
                    dev.gatun.cuda.DeviceBuffer buffer;
                }
                """);
        List<String> violations = violations(sources);
        assertEquals(1, violations.size(), () -> String.join("\n", violations));
        assertTrue(violations.getFirst().contains("dev.gatun.cuda.DeviceBuffer"), violations.getFirst());
    }

    @Test
    void theCorePackageImportingNvrtcIsReported() {
        Map<String, String> sources = withFile("dev/gatun/cuda/Planted.java", """
                package dev.gatun.cuda;

                import dev.gatun.cuda.nvrtc.CompiledProgram;

                public final class Planted {
                }
                """);
        List<String> violations = violations(sources);
        assertEquals(1, violations.size(), () -> String.join("\n", violations));
        assertTrue(violations.getFirst().contains("dev.gatun.cuda.nvrtc.CompiledProgram"), violations.getFirst());
    }

    @Test
    void aCycleIsReported() {
        Map<String, String> sources = withFile("dev/gatun/cuda/internal/driver/Planted.java", """
                package dev.gatun.cuda.internal.driver;

                import dev.gatun.cuda.internal.context.ContextState;

                final class Planted {
                }
                """);
        assertEquals(List.of(CONTEXT, DRIVER, CONTEXT), cycle(graph(references(sources))));
        assertEquals(1, violations(sources).size(), "the map does not let layer 2 reach up");
    }

    // ---- reading the sources ----

    private static Map<String, String> mainSources() {
        try (Stream<Path> files = Files.walk(MAIN)) {
            Map<String, String> sources = new TreeMap<>();
            for (Path f : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                if (!f.getFileName().toString().equals("module-info.java")) {
                    sources.put(MAIN.relativize(f).toString(), Files.readString(f));
                }
            }
            assertTrue(sources.size() > 50, "the main sources were not found under " + MAIN.toAbsolutePath());
            return sources;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every class of the main sources, nested ones included. */
    private static List<Class<?>> mainClasses() throws ClassNotFoundException {
        List<Class<?>> classes = new ArrayList<>();
        for (Map.Entry<String, String> e : mainSources().entrySet()) {
            String file = Path.of(e.getKey()).getFileName().toString();
            String name = packageOf(e.getValue()) + "." + file.substring(0, file.length() - ".java".length());
            Deque<Class<?>> todo = new ArrayDeque<>(List.of(Class.forName(name, false, loader())));
            while (!todo.isEmpty()) {
                Class<?> c = todo.pop();
                classes.add(c);
                todo.addAll(List.of(c.getDeclaredClasses()));
            }
        }
        return classes;
    }

    private static Map<String, String> withFile(String path, String text) {
        Map<String, String> sources = new TreeMap<>(mainSources());
        sources.put(path, text);
        return sources;
    }

    private static String packageOf(String text) {
        Matcher m = PACKAGE.matcher(codeOnly(text));
        return m.find() ? m.group(1) : null;
    }

    /** Every reference from a file to a type of another Gatun package. */
    static List<Reference> references(Map<String, String> sources) {
        List<Reference> refs = new ArrayList<>();
        for (Map.Entry<String, String> e : sources.entrySet()) {
            String code = codeOnly(e.getValue());
            Matcher p = PACKAGE.matcher(code);
            if (!p.find()) {
                continue;
            }
            String from = p.group(1);
            Matcher m = QUALIFIED.matcher(code);
            while (m.find()) {
                String to = API + m.group(1).replaceAll("\\s", "");
                String type = m.group(2).equals("*") ? null : m.group(2);
                if (!to.equals(from)) {
                    refs.add(new Reference(e.getKey(), from, to, type));
                }
            }
        }
        return refs;
    }

    /** The text with comments, string and character literals blanked out (line breaks kept). */
    static String codeOnly(String text) {
        StringBuilder out = new StringBuilder(text.length());
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            if (text.startsWith("//", i)) {
                while (i < text.length() && text.charAt(i) != '\n') {
                    out.append(' ');
                    i++;
                }
            } else if (text.startsWith("/*", i)) {
                int end = text.indexOf("*/", i + 2);
                end = end < 0 ? text.length() : end + 2;
                blank(text, i, end, out);
                i = end;
            } else if (text.startsWith("\"\"\"", i)) {
                int end = text.indexOf("\"\"\"", i + 3);
                end = end < 0 ? text.length() : end + 3;
                blank(text, i, end, out);
                i = end;
            } else if (c == '"' || c == '\'') {
                int end = i + 1;
                while (end < text.length() && text.charAt(end) != c && text.charAt(end) != '\n') {
                    end += text.charAt(end) == '\\' ? 2 : 1;
                }
                end = Math.min(text.length(), end + 1);
                blank(text, i, end, out);
                i = end;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static void blank(String text, int from, int to, StringBuilder out) {
        for (int j = from; j < to; j++) {
            out.append(text.charAt(j) == '\n' ? '\n' : ' ');
        }
    }

    // ---- the rules ----

    /** Each graph face that declares a native resource, opens an arena or uses the bindings, once per finding. */
    static List<String> machineryInGraphFaces(Map<String, String> sources) {
        List<String> found = new ArrayList<>();
        for (Map.Entry<String, String> e : sources.entrySet()) {
            Path file = Path.of(e.getKey());
            String name = file.getFileName().toString().replace(".java", "");
            if (!GRAPH_FACES.contains(name) || !API.equals(packageOf(e.getValue()))) {
                continue;
            }
            String code = codeOnly(e.getValue());
            if (DECLARES_RESOURCE.matcher(code).find()) {
                found.add(e.getKey() + " declares a native resource");
            }
            if (OPENS_ARENA.matcher(code).find()) {
                found.add(e.getKey() + " opens an arena");
            }
            if (code.contains(BINDINGS_LIBRARIES + ".")) {
                found.add(e.getKey() + " uses the bindings");
            }
        }
        return found;
    }

    /** Every reference the map forbids, one line each, saying what to do. */
    static List<String> violations(Map<String, String> sources) {
        List<String> out = new ArrayList<>();
        for (Reference r : references(sources)) {
            if (!MAP.containsKey(r.toPackage()) && !BINDINGS.contains(r.toPackage())) {
                out.add(r.file() + ": " + r.target() + " is in no package on the map");
            } else if (r.from().startsWith(INTERNAL) && isPublic(r.toPackage())) {
                if (!isApiValueOrException(r)) {
                    out.add(r.file() + ": internal code uses the public " + r.target() + "; key it on internal "
                            + "types (ContextState, StreamState, NativeResource, an address), or, if it is an API value "
                            + "without a lifecycle, list it in PackageDependencyTest.API_VALUES");
                }
            } else if (MAP.containsKey(r.from()) && !MAP.get(r.from()).contains(r.toPackage())) {
                out.add(r.file() + ": " + r.from() + " may not depend on " + r.target()
                        + " (see the package map in runtime-core/README.md)");
            }
        }
        return out;
    }

    private static boolean isPublic(String pkg) {
        return pkg.equals(API) || pkg.equals(NVRTC) || pkg.equals(DOCTOR);
    }

    private static boolean isApiValueOrException(Reference r) {
        if (r.toType() == null) {
            return false; // a wildcard import of a public package
        }
        if (API_VALUES.contains(r.target())) {
            return true;
        }
        try {
            return Throwable.class.isAssignableFrom(Class.forName(r.target(), false, loader()));
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static ClassLoader loader() {
        return PackageDependencyTest.class.getClassLoader();
    }

    /** Package to the packages it depends on, without the uses of API values and exceptions. */
    static Map<String, Set<String>> graph(List<Reference> refs) {
        Map<String, Set<String>> g = new TreeMap<>();
        for (Reference r : refs) {
            if (r.from().startsWith(INTERNAL) && isPublic(r.toPackage()) && isApiValueOrException(r)) {
                continue; // values are shared vocabulary, like java.lang
            }
            g.computeIfAbsent(r.from(), k -> new TreeSet<>()).add(r.toPackage());
        }
        return g;
    }

    /** A cycle of packages (first = last), or an empty list when there is none. */
    static List<String> cycle(Map<String, Set<String>> graph) {
        Map<String, Integer> state = new HashMap<>(); // 1: on the path, 2: done
        for (String start : new TreeSet<>(graph.keySet())) {
            Deque<String> path = new ArrayDeque<>();
            List<String> found = visit(start, graph, state, path);
            if (!found.isEmpty()) {
                return found;
            }
        }
        return List.of();
    }

    private static List<String> visit(String node, Map<String, Set<String>> graph, Map<String, Integer> state,
            Deque<String> path) {
        Integer s = state.get(node);
        if (s != null && s == 2) {
            return List.of();
        }
        if (s != null) {
            List<String> onPath = new ArrayList<>(path);
            List<String> loop = new ArrayList<>(onPath.subList(onPath.indexOf(node), onPath.size()));
            loop.add(node);
            return loop;
        }
        state.put(node, 1);
        path.addLast(node);
        for (String next : graph.getOrDefault(node, Set.of())) {
            List<String> found = visit(next, graph, state, path);
            if (!found.isEmpty()) {
                return found;
            }
        }
        path.removeLast();
        state.put(node, 2);
        return List.of();
    }
}
