package dev.gatun.cuda.testing;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/** The exception types a module's API declares, read from its compiled classes. */
public final class ExceptionTypes {

    /** The module's compiled main classes; tests run in the module's directory. */
    private static final Path CLASSES = Path.of("target", "classes");

    private ExceptionTypes() {
    }

    /**
     * The public Throwable types compiled into {@code pkg} (not its subpackages) of the module
     * under test, loaded through {@code anchor}'s class loader.
     */
    public static Set<Class<?>> declaredIn(String pkg, Class<?> anchor) throws IOException {
        Path dir = CLASSES.resolve(pkg.replace('.', '/'));
        if (!Files.isDirectory(dir)) {
            throw new AssertionError("no compiled classes under " + dir.toAbsolutePath());
        }
        List<String> files;
        try (Stream<Path> listing = Files.list(dir)) {
            files = listing.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".class")).toList();
        }
        Set<Class<?>> found = new HashSet<>();
        for (String file : files) {
            String binaryName = pkg + "." + file.substring(0, file.length() - ".class".length());
            Class<?> type;
            try {
                type = Class.forName(binaryName, false, anchor.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new AssertionError(binaryName + " is compiled but cannot be loaded", e);
            }
            if (Throwable.class.isAssignableFrom(type) && Modifier.isPublic(type.getModifiers())) {
                found.add(type);
            }
        }
        return found;
    }
}
