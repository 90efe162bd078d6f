package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.internal.nvrtc.CacheDirectory;
import dev.gatun.cuda.internal.nvrtc.CacheEntryFormat;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A content-addressed on-disk cache of NVRTC output, shared by every process of the user. An
 * {@link NvrtcCompiler} given one looks each compilation up by a SHA-256 of everything that
 * determines its result (source, options, target, NVRTC version, include directories, name
 * expressions) and calls NVRTC only on a miss.
 *
 * <p>The cache never fails a compile: an entry that cannot be read, or is truncated, corrupted
 * or foreign, is logged and ignored, and the fresh result overwrites it; an entry that cannot be
 * written is logged and skipped. An entry is written to a temporary file in the same directory
 * and renamed over its name, so no reader, in this process or another, ever sees half of one.
 *
 * <p>Headers reached through include directories are not hashed (NVRTC only knows which it read
 * after compiling): when your own headers change, change the source or an option (e.g. a
 * {@code -D} revision), or delete the directory.
 */
public final class KernelCache {

    /** Turns the default cache off: {@code -Dgatun.kernelCache=off}. */
    public static final String SWITCH_PROPERTY = "gatun.kernelCache";
    /** Moves the default cache: {@code -Dgatun.kernelCache.dir=/path}. */
    public static final String DIRECTORY_PROPERTY = "gatun.kernelCache.dir";

    private static final Logger LOG = LoggerFactory.getLogger(KernelCache.class);
    private static final KernelCache DISABLED = new KernelCache(null);

    private final CacheDirectory files;

    private KernelCache(CacheDirectory files) {
        this.files = files;
    }

    /** A cache in {@code directory}, created on the first write. */
    public static KernelCache at(Path directory) {
        return new KernelCache(new CacheDirectory(directory));
    }

    /** No cache: every compile calls NVRTC. */
    public static KernelCache disabled() {
        return DISABLED;
    }

    /**
     * The cache the system properties and environment configure: off when {@value #SWITCH_PROPERTY}
     * is {@code off}; otherwise in {@value #DIRECTORY_PROPERTY}, else in
     * {@code $XDG_CACHE_HOME/gatun/kernels}, else in {@code ~/.cache/gatun/kernels}.
     *
     * @throws IllegalArgumentException when {@value #SWITCH_PROPERTY} is not on, off, true or false
     */
    public static KernelCache defaultCache() {
        return configured(System::getProperty, System::getenv);
    }

    static KernelCache configured(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        String enabled = properties.apply(SWITCH_PROPERTY);
        if (enabled != null && !enabled.isBlank()) {
            switch (enabled.strip().toLowerCase(Locale.ROOT)) {
                case "off", "false" -> {
                    return disabled();
                }
                case "on", "true" -> {
                }
                default -> throw new IllegalArgumentException("system property " + SWITCH_PROPERTY + " is '" + enabled
                        + "'; set it to 'off' to disable the kernel cache, or 'on' (the default)");
            }
        }
        String dir = properties.apply(DIRECTORY_PROPERTY);
        if (dir != null && !dir.isBlank()) {
            return at(Path.of(dir.strip()));
        }
        String xdg = environment.apply("XDG_CACHE_HOME");
        // The XDG base directory specification says to ignore a relative value.
        if (xdg != null && !xdg.isBlank() && Path.of(xdg.strip()).isAbsolute()) {
            return at(Path.of(xdg.strip(), "gatun", "kernels"));
        }
        return at(Path.of(properties.apply("user.home"), ".cache", "gatun", "kernels"));
    }

    public boolean isEnabled() {
        return files != null;
    }

    /** Where entries live; empty when the cache is disabled. */
    public Optional<Path> directory() {
        return files == null ? Optional.empty() : Optional.of(files.root());
    }

    /** The program stored under {@code key}, or empty on a miss or an unusable entry. */
    Optional<CompiledProgram> load(String key) {
        if (files == null) {
            return Optional.empty();
        }
        Optional<byte[]> bytes;
        try {
            bytes = files.read(key);
        } catch (IOException e) {
            LOG.warn("cannot read kernel cache entry {} ({}); compiling instead", files.entry(key), e.toString());
            return Optional.empty();
        }
        if (bytes.isEmpty()) {
            LOG.debug("kernel cache miss for {}", key);
            return Optional.empty();
        }
        return switch (CacheEntryFormat.decode(key, bytes.get())) {
            case CacheEntryFormat.Valid valid -> {
                LOG.debug("kernel cache hit for {}", key);
                yield Optional.of(valid.program());
            }
            case CacheEntryFormat.Invalid invalid -> {
                LOG.warn("ignoring kernel cache entry {}: {}; it is rewritten after this compile",
                        files.entry(key), invalid.reason());
                yield Optional.empty();
            }
        };
    }

    /** Stores {@code program} under {@code key}; a failure is logged, never thrown. */
    void store(String key, CompiledProgram program) {
        if (files == null) {
            return;
        }
        try {
            files.write(key, CacheEntryFormat.encode(key, program));
        } catch (IOException e) {
            LOG.warn("cannot write kernel cache entry {} ({}); the compiled program is used but not cached",
                    files.entry(key), e.toString());
        }
    }

    @Override
    public String toString() {
        return files == null ? "KernelCache[disabled]" : "KernelCache[" + files.root() + "]";
    }
}
