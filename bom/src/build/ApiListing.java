import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.attribute.InnerClassInfo;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.reflect.AccessFlag;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Collectors;

/**
 * The public API of one published jar as text (api/ARTIFACT.api), checked by every build: the
 * module's exports, opens, services and transitive requires, then every type a user can reach
 * (public or protected, in an exported package, not inside a type they cannot reach) as the JDK's
 * {@code javap -protected -constants} prints it, types and members sorted so that moving code
 * around changes nothing. The root pom runs it in the verify phase of every module that deploys.
 *
 * <pre>
 * java ApiListing.java --packaging=P --jar=JAR --listing=FILE --artifact=ID --update=true|false [--exclude=PKG,...]
 * </pre>
 *
 * Check (update=false): exit 1 with what changed, type by type, when the jar's API is not the
 * listing, and say how to record it. Update: rewrite the listing when it differs. A module whose
 * packaging is not jar (gatun-parent) has no API and passes. javap does not print annotations or
 * sealed clauses; this listing adds the {@code sealed ... permits} clause, and annotations are left
 * to the source diff.
 */
public class ApiListing {

    static final String UPDATE_COMMAND = "./mvnw -B -q verify -DskipTests -Dgatun.api.update";

    public static void main(String[] args) throws IOException {
        Map<String, String> options = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                throw new IllegalArgumentException("ApiListing takes --name=value arguments, not " + arg);
            }
            options.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        if (!"jar".equals(option(options, "packaging"))) {
            return;
        }
        Path jar = Path.of(option(options, "jar"));
        Path listing = Path.of(option(options, "listing"));
        String artifact = option(options, "artifact");
        boolean update = switch (option(options, "update")) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("--update is true or false, not " + options.get("update"));
        };
        Set<String> excluded = Arrays.stream(options.getOrDefault("exclude", "").split(","))
                .map(String::strip).filter(s -> !s.isEmpty()).collect(Collectors.toCollection(TreeSet::new));

        String actual = listing(jar, artifact, excluded);
        String recorded = Files.exists(listing) ? Files.readString(listing) : "";
        Path shown = listing.getParent().getFileName().resolve(listing.getFileName());
        if (actual.equals(recorded)) {
            return;
        }
        if (update) {
            Files.createDirectories(listing.getParent());
            Files.writeString(listing, actual);
            System.out.println("api: wrote " + shown + (recorded.isEmpty() ? "" : ":\n" + difference(recorded, actual)));
            return;
        }
        System.err.println("api: the public API of " + artifact + " is not what " + shown + " records"
                + (recorded.isEmpty() ? " (there is no such file yet)" : ":\n" + difference(recorded, actual))
                + "\nIf the change is meant, record it and commit the listing with it (from the repository root):\n  "
                + UPDATE_COMMAND);
        System.exit(1);
    }

    private static String option(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException("ApiListing needs --" + name + "=...");
        }
        return value;
    }

    /** The listing of the jar's API, as the file holds it. */
    static String listing(Path jar, String artifact, Set<String> excluded) throws IOException {
        ModuleDescriptor module = ModuleFinder.of(jar).findAll().iterator().next().descriptor();
        Set<String> packages = new TreeSet<>(module.isAutomatic() ? module.packages()
                : module.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source).toList());
        if (!packages.containsAll(excluded)) {
            throw new IllegalArgumentException("--exclude names packages " + excluded + " that " + jar
                    + " does not export (it exports " + packages + ")");
        }
        packages.removeAll(excluded);

        StringBuilder out = new StringBuilder();
        out.append("# The public API of dev.gatun:").append(artifact).append(", checked by every build (./mvnw verify).\n");
        out.append("# Written by ").append(UPDATE_COMMAND).append(" (bom/src/build/ApiListing.java): never edit it by hand.\n");
        out.append("# The module, then each type a user can reach as javap -protected -constants prints it, sorted.\n");
        if (!excluded.isEmpty()) {
            out.append("# Not listed (the module's pom says why): ").append(String.join(", ", excluded)).append(".\n");
        }
        out.append('\n');
        moduleLines(module).forEach(l -> out.append(l).append('\n'));

        Map<String, ClassModel> classes = new TreeMap<>();
        try (JarFile file = new JarFile(jar.toFile())) {
            for (var entry : file.stream().toList()) {
                String name = entry.getName();
                int slash = name.lastIndexOf('/');
                if (name.endsWith(".class") && slash > 0 && packages.contains(name.substring(0, slash).replace('/', '.'))
                        && !name.endsWith("/package-info.class")) {
                    try (var in = file.getInputStream(entry)) {
                        classes.put(name.substring(0, name.length() - ".class".length()), ClassFile.of().parse(in.readAllBytes()));
                    }
                }
            }
        }
        List<String> api = classes.keySet().stream().filter(c -> reachable(c, classes)).map(c -> c.replace('/', '.')).toList();
        if (api.isEmpty()) {
            return out.toString();
        }
        List<String> javapArgs = new ArrayList<>(List.of("-protected", "-constants", "-cp", jar.toString()));
        javapArgs.addAll(api);
        for (List<String> block : javap(javapArgs)) {
            String type = typeName(block.getFirst());
            ClassModel model = classes.get(type.replace('.', '/'));
            out.append('\n').append(sealed(block.getFirst(), model)).append('\n');
            // synchronized is how a method is implemented, not what it promises: left out.
            block.subList(1, block.size() - 1).stream().map(m -> m.replace(" synchronized ", " ")).sorted()
                    .forEach(m -> out.append(m).append('\n'));
            out.append("}\n");
        }
        return out.toString();
    }

    /** What the descriptor promises users: exports, opens, services and transitive requires. */
    private static List<String> moduleLines(ModuleDescriptor module) {
        List<String> lines = new ArrayList<>();
        lines.add((module.isAutomatic() ? "automatic module " : "module ") + module.name());
        TreeSet<String> directives = new TreeSet<>();
        module.exports().forEach(e -> directives.add("exports " + e.source() + targets(e.targets())));
        module.opens().forEach(o -> directives.add("opens " + o.source() + targets(o.targets())));
        module.requires().stream().filter(r -> r.modifiers().contains(ModuleDescriptor.Requires.Modifier.TRANSITIVE))
                .forEach(r -> directives.add("requires transitive " + r.name()));
        module.uses().forEach(s -> directives.add("uses " + s));
        // The service, not the class that provides it: that class is internal.
        module.provides().forEach(p -> directives.add("provides " + p.service()));
        if (!module.isAutomatic()) {
            directives.forEach(d -> lines.add("  " + d));
        }
        return lines;
    }

    private static String targets(Set<String> targets) {
        return targets.isEmpty() ? "" : " to " + String.join(", ", new TreeSet<>(targets));
    }

    /** Public, or a protected or public member type, and every enclosing type so too. */
    private static boolean reachable(String internalName, Map<String, ClassModel> classes) {
        ClassModel model = classes.get(internalName);
        if (model == null) {
            return false;
        }
        Optional<InnerClassInfo> self = model.findAttribute(Attributes.innerClasses()).stream()
                .flatMap(a -> a.classes().stream())
                .filter(i -> i.innerClass().asInternalName().equals(internalName))
                .findFirst();
        if (self.isEmpty()) {
            return model.flags().has(AccessFlag.PUBLIC);
        }
        InnerClassInfo info = self.get();
        return info.outerClass().isPresent()
                && (info.has(AccessFlag.PUBLIC) || info.has(AccessFlag.PROTECTED))
                && reachable(info.outerClass().get().asInternalName(), classes);
    }

    /** javap's output, one block per type: the header line, the member lines, the closing brace. */
    private static List<List<String>> javap(List<String> args) {
        ToolProvider javap = ToolProvider.findFirst("javap")
                .orElseThrow(() -> new IllegalStateException("no javap in " + System.getProperty("java.home") + ": build with a JDK"));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = javap.run(new PrintWriter(out), new PrintWriter(err), args.toArray(String[]::new));
        if (status != 0 || !err.toString().isBlank()) {
            throw new IllegalStateException("javap " + args + " failed (" + status + "): " + err);
        }
        List<List<String>> blocks = new ArrayList<>();
        List<String> block = null;
        for (String line : out.toString().lines().toList()) {
            if (line.startsWith("Compiled from ") || line.isBlank()) {
                continue;
            }
            if (block == null) {
                block = new ArrayList<>();
            }
            block.add(line);
            if (line.equals("}")) {
                blocks.add(block);
                block = null;
            }
        }
        return blocks;
    }

    private static final Pattern TYPE = Pattern.compile("\\b(?:class|interface) ([\\w.$]+)");

    private static String typeName(String header) {
        Matcher m = TYPE.matcher(header);
        if (!m.find()) {
            throw new IllegalStateException("javap printed a type header ApiListing cannot read: " + header);
        }
        return m.group(1);
    }

    /** javap leaves out a sealed type's clause: the header gets it back. */
    private static String sealed(String header, ClassModel model) {
        return model.findAttribute(Attributes.permittedSubclasses())
                .map(a -> {
                    Matcher m = TYPE.matcher(header);
                    m.find();
                    String permits = a.permittedSubclasses().stream().map(c -> c.asInternalName().replace('/', '.'))
                            .sorted().collect(Collectors.joining(", "));
                    return header.substring(0, m.start()) + "sealed " + header.substring(m.start(), header.length() - 1)
                            + "permits " + permits + " {";
                })
                .orElse(header);
    }

    /** What changed between two listings, type by type: lines only in the old one (-), only in the new one (+). */
    static String difference(String recorded, String actual) {
        Map<String, List<String>> before = sections(recorded);
        Map<String, List<String>> after = sections(actual);
        TreeSet<String> keys = new TreeSet<>(before.keySet());
        keys.addAll(after.keySet());
        List<String> lines = new ArrayList<>();
        for (String key : keys) {
            List<String> old = before.getOrDefault(key, List.of());
            List<String> now = after.getOrDefault(key, List.of());
            if (old.isEmpty() || now.isEmpty()) {
                List<String> present = old.isEmpty() ? now : old;
                lines.add("  " + (old.isEmpty() ? "+ " : "- ") + present.getFirst().strip()
                        + " (" + (present.size() - 1) + (present.size() == 2 ? " member)" : " members)"));
                continue;
            }
            List<String> changes = new ArrayList<>();
            old.stream().filter(l -> !now.contains(l)).forEach(l -> changes.add("    - " + l.strip()));
            now.stream().filter(l -> !old.contains(l)).forEach(l -> changes.add("    + " + l.strip()));
            if (!changes.isEmpty()) {
                lines.add("  " + key + ":");
                lines.addAll(changes);
            }
        }
        if (lines.isEmpty()) {
            return "  (only the comment at the top differs)";
        }
        int shown = 60;
        return lines.size() <= shown ? String.join("\n", lines)
                : String.join("\n", lines.subList(0, shown)) + "\n  ... and " + (lines.size() - shown) + " more lines";
    }

    /** A listing's sections by what they describe: the module, and each type by its name; headers included, closing braces not. */
    private static Map<String, List<String>> sections(String listing) {
        Map<String, List<String>> sections = new LinkedHashMap<>();
        List<String> section = null;
        for (String line : listing.lines().toList()) {
            if (line.startsWith("#") || line.isBlank() || line.equals("}")) {
                section = line.equals("}") || line.isBlank() ? null : section;
                continue;
            }
            if (section == null) {
                section = new ArrayList<>();
                sections.put(line.contains(" module ") || line.startsWith("module ") ? "module" : typeName(line), section);
            }
            section.add(line);
        }
        return sections;
    }
}
