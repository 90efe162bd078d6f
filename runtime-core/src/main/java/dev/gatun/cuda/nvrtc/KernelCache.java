package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.internal.nvrtc.CacheDirectory;
import dev.gatun.cuda.internal.nvrtc.CacheEntryFormat;
import dev.gatun.cuda.internal.nvrtc.DirectoryTrust;
import dev.gatun.cuda.internal.nvrtc.EntryKey;
import dev.gatun.cuda.internal.settings.Settings;
import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A content-addressed on-disk cache of NVRTC output, shared by every process of the user. An
 * {@link NvrtcCompiler} given one looks each compilation up by a SHA-256 of everything that
 * determines its result (source, options, target, NVRTC version, the content of every file under
 * the caller's include directories, the toolkit's include directories, name expressions) and
 * calls NVRTC only on a miss. The caller's include directories count by content, not by path,
 * so a header unpacked into a new temporary directory by each JVM still hits.
 *
 * <p><b>Its size.</b> After each write, the entries least recently used (each hit marks its
 * entry used) are deleted until all of them take at most {@link #maxBytes()}
 * ({@value #MAX_BYTES_PROPERTY}, by default 256 MiB); the entry just written is never deleted,
 * and {@link KernelCacheCounters#evictions()} counts what was.
 *
 * <p>The cache never fails a compile: an entry that cannot be read, or is truncated, corrupted
 * or foreign, is logged and ignored, and the fresh result overwrites it; an entry that cannot be
 * written is logged and skipped. An entry is written to a temporary file in the same directory
 * and renamed over its name, so no reader, in this process or another, ever sees half of one.
 *
 * <p><b>What it trusts.</b> An entry is loaded and run as GPU code, and its checksum proves only
 * that it is intact, not who wrote it: whoever can write the directory can make any kernel run.
 * So the directory is used only when its owner is the current user and nobody else can write it
 * or replace it (the directories above it belong to the user or root and are writable by others
 * only with the sticky bit) and no component of its path is a symbolic link; Gatun creates it
 * with mode 0700. A directory that fails is not used: one WARN line names it and the reason,
 * {@link KernelCacheCounters#refusedLookups()} counts the compiles made without it. An entry
 * is read only when it is a regular file (checked without following links, before it is opened:
 * a FIFO is never opened) of at most {@link #maxEntryBytes()}; a failure to read one, out of
 * memory included, is an ignored entry.
 *
 * <p><b>The authenticated mode</b> ({@link #authenticatedAt}, or
 * {@value #AUTHENTICATE_PROPERTY}{@code =true}) is for a directory that others can write: each
 * entry carries an HMAC-SHA256 under a key only the user can read ({@value #KEY_FILE_PROPERTY},
 * by default {@code gatun/kernel-cache.key} in the user's cache directory, made with 32 random
 * bytes and mode 0600 on first use, in a directory trusted as above), and an entry without a MAC
 * that verifies is ignored and counted ({@link KernelCacheCounters#unauthenticatedEntries()}).
 * The cache directory's owner and mode are then not checked, its symbolic links still are.
 *
 * <p>Every file under the caller's include directories is read for each compile's key (NVRTC
 * only knows which headers it read after compiling), so name directories that hold headers, not
 * a whole source tree. An {@code -I} given as an option rather than as an include directory
 * counts by its spelling only.
 */
public final class KernelCache {

    /** Turns the default cache off: {@code -Dgatun.kernelCache=off}. */
    public static final String SWITCH_PROPERTY = "gatun.kernelCache";
    /** Moves the default cache: {@code -Dgatun.kernelCache.dir=/path} (absolute). */
    public static final String DIRECTORY_PROPERTY = "gatun.kernelCache.dir";
    /** Authenticates the default cache's entries: {@code -Dgatun.kernelCache.authenticate=true} (true or false). */
    public static final String AUTHENTICATE_PROPERTY = "gatun.kernelCache.authenticate";
    /** The key file of the authenticated mode: {@code -Dgatun.kernelCache.keyFile=/path} (absolute). */
    public static final String KEY_FILE_PROPERTY = "gatun.kernelCache.keyFile";
    /** The largest entry the default cache reads or writes, in bytes (default 256 MiB). */
    public static final String MAX_ENTRY_BYTES_PROPERTY = "gatun.kernelCache.maxEntryBytes";
    /** The most bytes the default cache's entries take together before the least recently used are evicted (default 256 MiB). */
    public static final String MAX_BYTES_PROPERTY = "gatun.kernelCache.maxBytes";
    /** The default of {@value #MAX_BYTES_PROPERTY}. */
    public static final long DEFAULT_MAX_BYTES = 256L << 20;

    private static final Logger LOG = LoggerFactory.getLogger(KernelCache.class);
    private static final KernelCache DISABLED = new KernelCache(null, null, 0);

    private final CacheDirectory files;
    /** The key file of the authenticated mode; null otherwise. */
    private final Path keyFile;
    /** The cap on all entries together, in bytes. */
    private final long maxBytes;
    /** Whether the directory may be used, decided once it exists; null until then. */
    private volatile Trust trust;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder stores = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder unauthenticated = new LongAdder();
    private final LongAdder refusedLookups = new LongAdder();
    private final LongAdder evictions = new LongAdder();

    /** The outcome of the trust checks: the MAC key (authenticated mode), or why the cache is not used. */
    private record Trust(byte[] macKey, String refusal) {
    }

    private KernelCache(CacheDirectory files, Path keyFile, long maxBytes) {
        this.files = files;
        this.keyFile = keyFile;
        this.maxBytes = maxBytes;
    }

    /**
     * A cache in {@code directory}, created (0700) on the first write, used only if trusted (see above).
     *
     * @param directory the cache directory
     * @return the cache
     */
    public static KernelCache at(Path directory) {
        return new KernelCache(new CacheDirectory(directory), null, DEFAULT_MAX_BYTES);
    }

    /**
     * A cache in {@code directory} whose entries are authenticated under the key in {@code keyFile} (made if
     * absent).
     *
     * @param directory the cache directory
     * @param keyFile the file that holds the key; made if absent
     * @return the cache
     */
    public static KernelCache authenticatedAt(Path directory, Path keyFile) {
        return new KernelCache(new CacheDirectory(directory), keyFile.toAbsolutePath().normalize(), DEFAULT_MAX_BYTES);
    }

    /**
     * This cache, reading and writing entries of at most {@code bytes} (1 to 2^31 - 9).
     *
     * @param bytes the largest entry size, in bytes
     * @return the new cache
     */
    public KernelCache withMaxEntryBytes(long bytes) {
        if (files == null) {
            return this;
        }
        return new KernelCache(new CacheDirectory(files.root(), bytes), keyFile, maxBytes);
    }

    /**
     * This cache, evicting the least recently used entries after a write until all take at most
     * {@code bytes} together.
     *
     * @param bytes the most bytes the entries take together
     * @return the new cache
     * @throws IllegalArgumentException when {@code bytes} is less than 1
     */
    public KernelCache withMaxBytes(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("a kernel cache cap of " + bytes + " bytes; give at least 1, or use "
                    + "KernelCache.disabled() for no cache");
        }
        if (files == null) {
            return this;
        }
        return new KernelCache(files, keyFile, bytes);
    }

    /** {@return a cache that is off: every compile calls NVRTC} */
    public static KernelCache disabled() {
        return DISABLED;
    }

    /**
     * {@return the cache the system properties and environment configure: off when {@value #SWITCH_PROPERTY}
     * is {@code off}; otherwise in {@value #DIRECTORY_PROPERTY}, else in
     * {@code $XDG_CACHE_HOME/gatun/kernels}, else in {@code ~/.cache/gatun/kernels};
     * authenticated when {@value #AUTHENTICATE_PROPERTY} is true, with the key in
     * {@value #KEY_FILE_PROPERTY}, else in {@code gatun/kernel-cache.key} next to the default
     * directory; entries capped at {@value #MAX_ENTRY_BYTES_PROPERTY} bytes each and at
     * {@value #MAX_BYTES_PROPERTY} bytes together}
     *
     * @throws IllegalArgumentException when {@value #SWITCH_PROPERTY} is not on, off, true or
     *     false, a path is not absolute, {@value #AUTHENTICATE_PROPERTY} is not true or false, a
     *     key file is named without the authenticated mode, or a cap is not a number of bytes
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
        Path userCache = userCacheRoot(properties, environment);
        Path dir = absolute(properties, DIRECTORY_PROPERTY);
        boolean authenticate = Settings.flag("system property " + AUTHENTICATE_PROPERTY,
                properties.apply(AUTHENTICATE_PROPERTY), false);
        Path key = absolute(properties, KEY_FILE_PROPERTY);
        if (key != null && !authenticate) {
            throw new IllegalArgumentException("system property " + KEY_FILE_PROPERTY + " is set, but "
                    + AUTHENTICATE_PROPERTY + " is not true; set " + AUTHENTICATE_PROPERTY + "=true to authenticate "
                    + "entries under that key, or remove " + KEY_FILE_PROPERTY);
        }
        long cap = Settings.bytes("system property " + MAX_ENTRY_BYTES_PROPERTY, properties.apply(MAX_ENTRY_BYTES_PROPERTY),
                CacheDirectory.DEFAULT_MAX_ENTRY_BYTES, 1, CacheDirectory.MAX_ENTRY_BYTES_LIMIT, "");
        long total = Settings.bytes("system property " + MAX_BYTES_PROPERTY, properties.apply(MAX_BYTES_PROPERTY),
                DEFAULT_MAX_BYTES, 1, Long.MAX_VALUE, "; to keep no cache at all, set " + SWITCH_PROPERTY + "=off");
        Path directory = dir != null ? dir : userCache.resolve("gatun").resolve("kernels");
        KernelCache cache = authenticate
                ? authenticatedAt(directory, key != null ? key : userCache.resolve("gatun").resolve("kernel-cache.key"))
                : at(directory);
        return cache.withMaxEntryBytes(cap).withMaxBytes(total);
    }

    /** {@code $XDG_CACHE_HOME}, else {@code ~/.cache}. */
    private static Path userCacheRoot(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        String xdg = environment.apply("XDG_CACHE_HOME");
        // The XDG base directory specification says to ignore a relative value.
        if (xdg != null && !xdg.isBlank() && Path.of(xdg.strip()).isAbsolute()) {
            return Path.of(xdg.strip());
        }
        return Path.of(properties.apply("user.home"), ".cache");
    }

    /** The absolute path a property names; null when unset. */
    private static Path absolute(UnaryOperator<String> properties, String property) {
        String value = properties.apply(property);
        if (value == null || value.isBlank()) {
            return null;
        }
        Path path;
        try {
            path = Path.of(value.strip());
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("system property " + property + " is '" + value + "', not a valid path ("
                    + e.getMessage() + ")");
        }
        if (!path.isAbsolute()) {
            // Resolved against the working directory, it would change with where the JVM starts.
            throw new IllegalArgumentException("system property " + property + " is '" + value + "', which is not an "
                    + "absolute path; set it to an absolute path");
        }
        return path.normalize();
    }

    /** {@return whether this cache reads and writes entries; false for {@link #disabled()}} */
    public boolean isEnabled() {
        return files != null;
    }

    /** {@return where entries live; empty when the cache is disabled} */
    public Optional<Path> directory() {
        return files == null ? Optional.empty() : Optional.of(files.root());
    }

    /** {@return whether entries are authenticated ({@link #authenticatedAt})} */
    public boolean isAuthenticated() {
        return keyFile != null;
    }

    /** {@return the key file of the authenticated mode; empty otherwise} */
    public Optional<Path> keyFile() {
        return Optional.ofNullable(keyFile);
    }

    /** {@return the largest entry read or written, in bytes; 0 when disabled} */
    public long maxEntryBytes() {
        return files == null ? 0 : files.maxEntryBytes();
    }

    /** {@return the most bytes the entries take together after a write; 0 when disabled} */
    public long maxBytes() {
        return files == null ? 0 : maxBytes;
    }

    /** {@return what this cache has done so far} */
    public KernelCacheCounters counters() {
        return new KernelCacheCounters(hits.sum(), misses.sum(), stores.sum(), rejected.sum(), unauthenticated.sum(),
                refusedLookups.sum(), evictions.sum());
    }

    /**
     * Checks now whether this cache can be used, creating its directory (0700) if it does not
     * exist, as the first write would. A disabled cache has no reason.
     *
     * @return why it is not used (its directory, or the authenticated mode's key, is not trusted),
     *     or empty
     * @throws IOException when the directory does not exist and cannot be created
     */
    public Optional<String> refusal() throws IOException {
        return files == null ? Optional.empty() : Optional.ofNullable(trustCreating().refusal());
    }

    /** The trust decision, made once, when the directory exists; null while it does not. */
    private Trust existingTrust() {
        Trust t = trust;
        if (t != null) {
            return t;
        }
        synchronized (this) {
            if (trust == null && files.exists()) {
                trust = decide();
            }
            return trust;
        }
    }

    /** As {@link #existingTrust()}, creating the directory (0700) first when it does not exist. */
    private Trust trustCreating() throws IOException {
        Trust t = existingTrust();
        if (t != null) {
            return t;
        }
        files.create();
        t = existingTrust();
        if (t == null) {
            throw new IOException(files.root() + " was removed as it was created");
        }
        return t;
    }

    private Trust decide() {
        Path root = files.root();
        String refusal;
        byte[] macKey = null;
        try {
            UserPrincipal user = DirectoryTrust.currentUser();
            refusal = DirectoryTrust.problem(root, keyFile == null, user).orElse(null);
            if (refusal == null && keyFile != null) {
                macKey = EntryKey.loadOrCreate(keyFile, user);
            }
        } catch (IOException e) {
            refusal = "its authentication key cannot be used: " + e.getMessage();
        }
        if (refusal != null) {
            LOG.warn("not using the kernel cache directory {}: {}; compiling without the cache", root, refusal);
        }
        return new Trust(macKey, refusal);
    }

    /** The program stored under {@code key}, or empty on a miss or an unusable entry. */
    Optional<CompiledProgram> load(String key) {
        if (files == null) {
            return Optional.empty();
        }
        Trust t = existingTrust();
        if (t == null) {
            misses.increment(); // no directory yet: nothing was ever stored
            return Optional.empty();
        }
        if (t.refusal() != null) {
            refusedLookups.increment();
            return Optional.empty();
        }
        try {
            return decode(key, t);
        } catch (OutOfMemoryError e) {
            // One array of at most maxEntryBytes failed to allocate; the heap is as it was.
            rejected.increment();
            LOG.warn("kernel cache entry {} does not fit in the heap ({}); compiling instead (lower {})",
                    files.entry(key), e.getMessage(), MAX_ENTRY_BYTES_PROPERTY);
            return Optional.empty();
        }
    }

    private Optional<CompiledProgram> decode(String key, Trust t) {
        Optional<byte[]> bytes;
        try {
            bytes = files.read(key);
        } catch (CacheDirectory.RefusedEntryException e) {
            rejected.increment();
            LOG.warn("ignoring kernel cache entry {}: {}; compiling instead", files.entry(key), e.getMessage());
            return Optional.empty();
        } catch (IOException e) {
            rejected.increment();
            LOG.warn("cannot read kernel cache entry {} ({}); compiling instead", files.entry(key), e.toString());
            return Optional.empty();
        }
        if (bytes.isEmpty()) {
            misses.increment();
            LOG.debug("kernel cache miss for {}", key);
            return Optional.empty();
        }
        return switch (CacheEntryFormat.decode(key, bytes.get(), t.macKey())) {
            case CacheEntryFormat.Valid valid -> {
                hits.increment();
                LOG.debug("kernel cache hit for {}", key);
                markUsed(key);
                yield Optional.of(valid.program());
            }
            case CacheEntryFormat.Invalid invalid -> {
                rejected.increment();
                LOG.warn("ignoring kernel cache entry {}: {}; it is rewritten after this compile",
                        files.entry(key), invalid.reason());
                yield Optional.empty();
            }
            case CacheEntryFormat.Unauthenticated u -> {
                unauthenticated.increment();
                LOG.warn("ignoring kernel cache entry {}: {}; it is rewritten after this compile",
                        files.entry(key), u.reason());
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
            Trust t = trustCreating();
            if (t.refusal() != null) {
                return; // said once, at WARN, when decided
            }
            byte[] entry = CacheEntryFormat.encode(key, program, t.macKey());
            if (entry.length > files.maxEntryBytes()) {
                LOG.debug("not caching {}: its entry of {} bytes is over the cap of {}", key, entry.length,
                        files.maxEntryBytes());
                return;
            }
            files.write(key, entry);
            stores.increment();
        } catch (IOException e) {
            LOG.warn("cannot write kernel cache entry {} ({}); the compiled program is used but not cached",
                    files.entry(key), e.toString());
            return;
        }
        evictAfterWriting(key);
    }

    private void markUsed(String key) {
        try {
            files.markUsed(key);
        } catch (IOException e) {
            // e.g. an authenticated cache's entry written by another user: it still works, and is
            // evicted as if it had not been used since it was written.
            LOG.debug("cannot mark kernel cache entry {} as used ({}); eviction sees its older time",
                    files.entry(key), e.toString());
        }
    }

    /** Deletes the least recently used entries until all take at most the cap; never {@code written}'s. */
    private void evictAfterWriting(String written) {
        List<CacheDirectory.Listed> victims;
        try {
            victims = files.evictionVictims(maxBytes, written);
        } catch (IOException e) {
            LOG.warn("cannot list the kernel cache directory {} to keep it under {} bytes ({}); nothing is evicted",
                    files.root(), maxBytes, e.toString());
            return;
        }
        for (CacheDirectory.Listed victim : victims) {
            try {
                if (files.delete(victim)) {
                    evictions.increment();
                    LOG.debug("evicted kernel cache entry {} ({} bytes, last used {})", victim.path(), victim.bytes(),
                            victim.used());
                }
            } catch (IOException e) {
                LOG.warn("cannot evict kernel cache entry {} ({}); the cache stays over {} bytes until it can",
                        victim.path(), e.toString(), maxBytes);
                return;
            }
        }
    }

    @Override
    public String toString() {
        return files == null ? "KernelCache[disabled]"
                : "KernelCache[" + files.root() + (keyFile == null ? "" : ", authenticated") + "]";
    }
}
