package dev.gatun.cuda;

import dev.gatun.cuda.internal.settings.Settings;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Whether the driver writes a GPU coredump when a kernel of a context faults (illegal address,
 * misaligned access, trap, ...): the evidence of a sticky error, which otherwise ends with the
 * poisoned context. Part of {@link ContextOptions}; applied to the context as it opens
 * ({@code cuCoredumpSetAttribute} on its primary context, CUDA 12.5 or newer).
 *
 * <p>Gatun always adds {@code CU_COREDUMP_SKIP_ABORT} to the driver's generation flags when it
 * turns dumps on: without it the driver aborts the process after writing the dump, and the JVM
 * would die. With it, the failing call returns its sticky error, the context is poisoned as
 * without dumps, and the {@link ContextPoisonedException} names the file
 * ({@link ContextPoisonedException#coredumpFile()}). Open it with
 * {@code cuda-gdb -ex "target cudacore FILE"}.
 *
 * <p>The driver's coredump environment variables ({@code CUDA_ENABLE_COREDUMP_ON_EXCEPTION},
 * {@code CUDA_COREDUMP_FILE}, {@code CUDA_COREDUMP_GENERATION_FLAGS}), when set before CUDA
 * initializes, take precedence over these settings: Gatun reads the settings back and refuses to
 * open the context when the driver would still abort the process, or would not dump.
 *
 * @param enabled whether a GPU exception in the context writes a coredump
 * @param file where the dump is written: an absolute path, in which the driver replaces
 *     {@code %p} with the process id, {@code %h} with the host name and {@code %t} with the time
 *     (at most {@value #MAX_FILE_BYTES} bytes in UTF-8)
 * @param lightweight whether the dump leaves out device memory (global, shared, local, constant
 *     banks) and non-relocated ELF images ({@code CU_COREDUMP_LIGHTWEIGHT_FLAGS}): small and quick,
 *     and still names the faulting kernel and where it stopped. A full dump holds the device's
 *     memory, which on a large GPU can be tens of gigabytes
 */
public record GpuCoredumps(boolean enabled, String file, boolean lightweight) {

    /** The longest {@link #file()} the driver takes, in UTF-8 bytes (its limit is 1023 characters plus the NUL). */
    public static final int MAX_FILE_BYTES = 1023;

    /** The file name of a dump when only the directory is chosen: host and process id, so it is known exactly. */
    public static final String DEFAULT_FILE_NAME = "core_%h_%p.nvcudmp";

    /** System property that turns GPU coredumps on for contexts opened with {@link ContextOptions#defaults()}: true or false. */
    public static final String PROPERTY = "gatun.coredump";

    /**
     * System property with the dump file's absolute path pattern ({@link #file()}); only with
     * {@value #PROPERTY}{@code =true}. Unset: {@value #DEFAULT_FILE_NAME} in the working directory.
     */
    public static final String FILE_PROPERTY = "gatun.coredump.file";

    /** System property that chooses a lightweight (true, the default) or full (false) dump; only with {@value #PROPERTY}{@code =true}. */
    public static final String LIGHTWEIGHT_PROPERTY = "gatun.coredump.lightweight";

    /**
     * Checks the components.
     *
     * @throws NullPointerException when {@code file} is null
     * @throws IllegalArgumentException when {@code file} is not an absolute path, contains a NUL
     *     character or is longer than {@value #MAX_FILE_BYTES} bytes in UTF-8
     */
    public GpuCoredumps {
        Objects.requireNonNull(file, "file");
        if (file.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("the coredump file pattern contains a NUL character: " + file);
        }
        if (!file.startsWith("/")) {
            throw new IllegalArgumentException("the coredump file pattern '" + file + "' is not an absolute path; give "
                    + "the directory too (e.g. GpuCoredumps.into(Path.of(\"/tmp\")))");
        }
        int bytes = file.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_FILE_BYTES) {
            throw new IllegalArgumentException("the coredump file pattern is " + bytes + " bytes long in UTF-8; the "
                    + "driver takes at most " + MAX_FILE_BYTES);
        }
    }

    /** {@return no dumps: Gatun leaves the driver's coredump settings as they are} */
    public static GpuCoredumps off() {
        return new GpuCoredumps(false, inWorkingDirectory(), true);
    }

    /**
     * {@return lightweight dumps on, written to {@value #DEFAULT_FILE_NAME} in {@code directory}}
     *
     * @param directory where the dumps go; made absolute against the working directory
     */
    public static GpuCoredumps into(Path directory) {
        return new GpuCoredumps(true, directory.toAbsolutePath().resolve(DEFAULT_FILE_NAME).toString(), true);
    }

    /**
     * {@return these settings with dumps on or off}
     *
     * @param on the new {@link #enabled()}
     */
    public GpuCoredumps withEnabled(boolean on) {
        return new GpuCoredumps(on, file, lightweight);
    }

    /**
     * {@return these settings with another file pattern}
     *
     * @param pattern the new {@link #file()}: absolute, with {@code %p}, {@code %h}, {@code %t} as the driver expands them
     */
    public GpuCoredumps withFile(String pattern) {
        return new GpuCoredumps(enabled, pattern, lightweight);
    }

    /**
     * {@return these settings with lightweight or full dumps}
     *
     * @param on the new {@link #lightweight()}
     */
    public GpuCoredumps withLightweight(boolean on) {
        return new GpuCoredumps(enabled, file, on);
    }

    /**
     * {@return the settings the system properties {@value #PROPERTY}, {@value #FILE_PROPERTY} and
     * {@value #LIGHTWEIGHT_PROPERTY} give: off unless {@value #PROPERTY} is true}
     *
     * @throws IllegalArgumentException when one of them is set to something it cannot mean (a
     *     switch takes true or false only, the file must be absolute), or when the file or
     *     lightweight property is set while dumps are not turned on (a setting that would do nothing)
     */
    public static GpuCoredumps fromSystemProperties() {
        boolean on = Settings.flag("system property " + PROPERTY, System.getProperty(PROPERTY), false);
        String file = System.getProperty(FILE_PROPERTY);
        String lightweight = System.getProperty(LIGHTWEIGHT_PROPERTY);
        if (!on) {
            for (String[] set : new String[][] {{FILE_PROPERTY, file}, {LIGHTWEIGHT_PROPERTY, lightweight}}) {
                if (set[1] != null) {
                    throw new IllegalArgumentException("system property " + set[0] + " is '" + set[1] + "', but GPU "
                            + "coredumps are off; set -D" + PROPERTY + "=true to turn them on, or remove " + set[0]);
                }
            }
            return off();
        }
        boolean light = Settings.flag("system property " + LIGHTWEIGHT_PROPERTY, lightweight, true);
        if (file == null) {
            return new GpuCoredumps(true, inWorkingDirectory(), light);
        }
        try {
            return new GpuCoredumps(true, file.strip(), light);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("system property " + FILE_PROPERTY + " is '" + file + "': "
                    + e.getMessage(), e);
        }
    }

    private static String inWorkingDirectory() {
        return Path.of("").toAbsolutePath().resolve(DEFAULT_FILE_NAME).toString();
    }
}
