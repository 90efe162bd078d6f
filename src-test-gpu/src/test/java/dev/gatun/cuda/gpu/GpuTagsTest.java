package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Runs without a GPU: every tag the suite uses is one of {@link GpuTags}, and {@code sanitize}
 * leaves out exactly the tags {@link GpuTags} says each tool leaves out. A test tagged with a
 * misspelled tag, or a tag added to GpuTags but not to the script, would otherwise run (and stall
 * or fail) under the sanitizers unnoticed.
 */
class GpuTagsTest {

    private static final Set<String> EVERY_SANITIZER = Set.of(GpuTags.LARGE, GpuTags.FAULTS, GpuTags.CORRUPT_IMAGES,
            GpuTags.TIMING);
    private static final Set<String> INITCHECK_ALSO = Set.of(GpuTags.HOST_RELEASED_KERNEL,
            GpuTags.WRITTEN_BY_ANOTHER_PROCESS, GpuTags.MEASURES_DEVICE_MEMORY, GpuTags.BREAKS_INITCHECK);

    @Test
    void everyTagTheSuiteUsesIsDeclaredInGpuTags() throws Exception {
        Set<String> declared = declaredTags();
        TreeMap<String, String> unknown = new TreeMap<>();
        int tagged = 0;
        for (Class<?> c : suiteClasses()) {
            List<Tag> tags = new ArrayList<>(Arrays.asList(c.getAnnotationsByType(Tag.class)));
            for (Method m : c.getDeclaredMethods()) {
                tags.addAll(Arrays.asList(m.getAnnotationsByType(Tag.class)));
            }
            for (Tag t : tags) {
                tagged++;
                if (!declared.contains(t.value())) {
                    unknown.put(t.value(), c.getSimpleName());
                }
            }
        }
        assertTrue(tagged >= 10, "found only " + tagged + " tags: is the suite's class scan broken?");
        assertEquals(new TreeMap<>(), unknown, "tags not declared in GpuTags (tag=class)");
    }

    @Test
    void sanitizeLeavesOutWhatGpuTagsSays() throws IOException {
        List<String> script = Files.readAllLines(sanitizeScript());
        assertEquals(new TreeSet<>(EVERY_SANITIZER), words(script, "every_tool"));
        assertEquals(new TreeSet<>(INITCHECK_ALSO), words(script, "initcheck_also"));
    }

    /** The words of the script's line {@code name="..."}. */
    private static TreeSet<String> words(List<String> script, String name) {
        String prefix = name + "=\"";
        List<String> lines = script.stream().filter(l -> l.startsWith(prefix)).toList();
        assertEquals(1, lines.size(), "sanitize assigns " + name + " once: " + lines);
        String line = lines.get(0);
        return new TreeSet<>(Arrays.asList(line.substring(prefix.length(), line.lastIndexOf('"')).split(" ")));
    }

    /** The script beside the bundle's jars when run from the bundle, else in this module's sources. */
    private static Path sanitizeScript() {
        for (Path p : List.of(Path.of("sanitize"), Path.of("src/bundle/sanitize"))) {
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        throw new AssertionError("no sanitize script in " + Path.of("").toAbsolutePath()
                + " or its src/bundle: run from the bundle or from src-test-gpu");
    }

    private static Set<String> declaredTags() throws IllegalAccessException {
        Set<String> out = new TreeSet<>();
        for (Field f : GpuTags.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
                out.add((String) f.get(null));
            }
        }
        return out;
    }

    /** Every class of this package and below, from the test classes' folder or jar. */
    private static List<Class<?>> suiteClasses() throws IOException, URISyntaxException, ClassNotFoundException {
        Path where = Path.of(GpuTags.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String folder = GpuTags.class.getPackageName().replace('.', '/');
        List<String> names;
        if (Files.isDirectory(where)) {
            names = classNames(where, where.resolve(folder));
        } else {
            try (FileSystem jar = FileSystems.newFileSystem(where)) {
                names = classNames(jar.getPath("/"), jar.getPath("/" + folder));
            }
        }
        List<Class<?>> out = new ArrayList<>();
        for (String n : names) {
            out.add(Class.forName(n, false, GpuTags.class.getClassLoader()));
        }
        return out;
    }

    private static List<String> classNames(Path root, Path folder) throws IOException {
        try (Stream<Path> files = Files.walk(folder)) {
            return files.map(p -> root.relativize(p).toString())
                    .filter(n -> n.endsWith(".class") && !n.contains("$"))
                    .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.').replace('\\', '.'))
                    .sorted()
                    .toList();
        }
    }
}
