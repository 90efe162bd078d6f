package dev.gatun.cuda.doctor;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.Gatun;
import dev.gatun.cuda.GpuCoredumps;
import dev.gatun.cuda.nvrtc.KernelCache;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.function.Supplier;

/**
 * What Gatun finds on this machine, and whether its settings work: the report that
 * {@code gatun doctor} prints, for an application or a test suite to print where it needs it (at
 * start-up, in a failure's message, in a support bundle).
 *
 * <pre>{@code
 * if (!Cuda.isAvailable()) {
 *     Doctor.diagnose(System.err);   // every place the driver was looked for, and why it was not used
 * }
 * }</pre>
 *
 * <p>The report names Gatun's, Java's and the OS's versions, the driver (where it was loaded from,
 * or every path tried and why each failed), each device, NVRTC, and the settings in force: the
 * kernel cache, the device pool, leak tracking, the out-of-memory ladder and GPU coredumps. The
 * settings are read exactly as Gatun reads them ({@link KernelCache#defaultCache()},
 * {@link ContextOptions#defaults()}), so a value the application would refuse is refused here,
 * with Gatun's own message. Looking changes nothing: no directory is created, no context opened.
 * It never throws for what it finds, and never prints a stack trace.
 */
public final class Doctor {

    /** The driver's own coredump environment variables, which take precedence over Gatun's setting when set. */
    static final List<String> COREDUMP_ENVIRONMENT = List.of("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_FILE",
            "CUDA_COREDUMP_GENERATION_FLAGS", "CUDA_ENABLE_LIGHTWEIGHT_COREDUMP", "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION",
            "CUDA_COREDUMP_SHOW_PROGRESS");

    /** The driver's device filter: with it set, the driver shows only the devices it lists (none when empty). */
    static final String VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES";

    private final Supplier<Cuda> driver;
    private final Supplier<NvrtcLibrary> nvrtc;
    private final Map<String, String> environment;
    private final Supplier<Iterable<DoctorSection>> sections;

    /** @param environment the process's environment variables, as {@link System#getenv()} gives them */
    Doctor(Supplier<Cuda> driver, Supplier<NvrtcLibrary> nvrtc, Map<String, String> environment) {
        this(driver, nvrtc, environment, List::of);
    }

    /** @param sections what other modules add to the report ({@link DoctorSection}) */
    Doctor(Supplier<Cuda> driver, Supplier<NvrtcLibrary> nvrtc, Map<String, String> environment,
            Supplier<Iterable<DoctorSection>> sections) {
        this.driver = driver;
        this.nvrtc = nvrtc;
        this.environment = environment;
        this.sections = sections;
    }

    /**
     * Writes the report on this process ({@link Cuda#system()}, {@link NvrtcLibrary#system()}, its
     * system properties and environment) to {@code report}, and returns its verdict.
     *
     * @param report where the report goes, line by line: {@code System.err}, a {@code StringBuilder},
     *     a log's writer
     * @return how many devices are usable and how many settings need attention
     * @throws UncheckedIOException when {@code report} fails to take a line
     */
    public static Diagnosis diagnose(Appendable report) {
        return new Doctor(Cuda::system, NvrtcLibrary::system, System.getenv(),
                () -> ServiceLoader.load(DoctorSection.class, Doctor.class.getClassLoader())).run(report);
    }

    Diagnosis run(Appendable report) {
        Lines out = new Lines(report);
        out.println("Gatun doctor");
        reportVersions(out);
        int usable = reportDriver(out);
        reportNvrtc(out);
        reportSections(out);
        int badSettings = reportSettings(out);
        String settingsNote = badSettings == 0 ? ""
                : ", but " + badSettings + (badSettings == 1 ? " setting needs" : " settings need") + " attention (above)";
        out.println();
        if (usable == 0) {
            out.println("Result: no usable CUDA device" + settingsNote + ". GPU work will fail with CudaUnavailableException;");
            out.println("Gatun's CPU-side features and tests still work.");
        } else {
            out.println("Result: " + usable + (usable == 1 ? " usable device" : " usable devices") + settingsNote + ".");
        }
        return new Diagnosis(usable, badSettings);
    }

    /** The report's lines, each ended as {@code println} ends it; a failing {@link Appendable} throws unchecked. */
    private record Lines(Appendable to) {

        void println() {
            println("");
        }

        void println(String line) {
            try {
                to.append(line).append(System.lineSeparator());
            } catch (IOException e) {
                throw new UncheckedIOException("the doctor's report could not be written", e);
            }
        }

        void printf(String format, Object... args) {
            println(String.format(Locale.ROOT, format, args));
        }
    }

    private static void reportVersions(Lines out) {
        String gatun;
        try {
            gatun = Gatun.version();
        } catch (IllegalStateException e) {
            gatun = "unknown: " + e.getMessage();
        }
        out.println("gatun:   " + gatun);
        out.println("java:    " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.vm.version") + ", " + System.getProperty("java.vendor") + "), "
                + System.getProperty("java.home"));
        out.println("os:      " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " ("
                + System.getProperty("os.arch") + ")");
    }

    /** Prints the driver, its devices and the driver's device filter; returns how many devices are usable. */
    private int reportDriver(Lines out) {
        int usable = reportDevices(out);
        String visible = environment.get(VISIBLE_DEVICES);
        if (visible != null) {
            // With an empty (or unmatched) filter, cuInit finds no device: the usual cause of a GPU
            // host whose GPU tests are all skipped.
            out.println("         environment " + VISIBLE_DEVICES + "=" + visible + " (the driver shows only the devices "
                    + "it lists" + (visible.isBlank() ? ", here none" : "") + ")");
        }
        return usable;
    }

    private int reportDevices(Lines out) {
        Cuda cuda;
        try {
            cuda = driver.get();
        } catch (CudaUnavailableException e) {
            out.println("driver:  NOT FOUND");
            out.println(indent(e.getMessage()));
            return 0;
        } catch (CudaException e) {
            out.println("driver:  loaded, but enumerating devices failed: " + e.getMessage());
            return 0;
        }
        out.println("driver:  " + cuda.driverLibrary());
        out.println("         supports CUDA " + cuda.driverVersion() + " (" + cuda.driverVersion().encoded() + ")");
        out.println("devices: " + cuda.deviceCount());
        int usable = 0;
        for (Device device : cuda.devices()) {
            try {
                DeviceCapabilities caps = device.capabilities();
                out.printf("  [%d] %s, compute capability %s, %d multiprocessors, %s, PCI %s",
                        device.ordinal(), device.name(), caps.computeCapability(), caps.multiprocessorCount(),
                        gib(device.totalMemoryBytes()), device.pciBusId());
                usable++;
            } catch (CudaException e) {
                out.println("  [" + device.ordinal() + "] unusable: " + e.getMessage());
            }
        }
        return usable;
    }

    private void reportNvrtc(Lines out) {
        try {
            NvrtcLibrary library = nvrtc.get();
            out.println("nvrtc:   " + library.library());
            out.println("         version " + library.version());
        } catch (CudaUnavailableException e) {
            out.println("nvrtc:   NOT FOUND (needed only to compile CUDA C++ at run time)");
            out.println(indent(e.getMessage()));
        }
    }

    /** Prints the sections other modules add; one that throws is reported, and the report goes on. */
    private void reportSections(Lines out) {
        try {
            for (DoctorSection section : sections.get()) {
                try {
                    section.report(out::println);
                } catch (RuntimeException e) {
                    out.println("section " + section.getClass().getName() + " failed: " + e);
                }
            }
        } catch (ServiceConfigurationError e) {
            out.println("a doctor section could not be loaded: " + e.getMessage());
        }
    }

    /** Prints the settings in force; returns how many need attention. */
    private int reportSettings(Lines out) {
        out.println("settings:");
        int bad = reportKernelCache(out) ? 0 : 1;
        return bad + reportContextOptions(out) + (reportCoredumps(out) ? 0 : 1);
    }

    /**
     * Prints the GPU coredump setting and the driver's coredump environment variables, which take
     * precedence over it; false when a setting is wrong, or the environment turns dumps on without
     * {@code skip_abort} (a kernel fault would then abort the JVM after its dump).
     */
    private boolean reportCoredumps(Lines out) {
        boolean ok = true;
        try {
            GpuCoredumps dumps = GpuCoredumps.fromSystemProperties();
            out.println("  gpu coredumps: " + (dumps.enabled()
                    ? "on, " + (dumps.lightweight() ? "lightweight" : "full (with device memory)") + ", written to "
                            + dumps.file() + " when a kernel faults; the JVM survives (CU_COREDUMP_SKIP_ABORT); open one "
                            + "with cuda-gdb -ex \"target cudacore FILE\""
                    : "off (-D" + GpuCoredumps.PROPERTY + "=true writes one when a kernel faults)"));
        } catch (IllegalArgumentException e) {
            out.println("  gpu coredumps: WRONG: " + e.getMessage());
            out.println("                 until it is fixed, opening a context with ContextOptions.defaults() will fail");
            ok = false;
        }
        for (String variable : COREDUMP_ENVIRONMENT) {
            String value = environment.get(variable);
            if (value != null) {
                out.println("                 environment " + variable + "=" + value + " (the driver's; it takes "
                        + "precedence over Gatun's setting)");
            }
        }
        String onException = environment.get("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
        String flags = environment.getOrDefault("CUDA_COREDUMP_GENERATION_FLAGS", "");
        if ("1".equals(onException == null ? null : onException.strip()) && !flags.contains("skip_abort")) {
            out.println("                 ABORTS: with CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 and no skip_abort in "
                    + "CUDA_COREDUMP_GENERATION_FLAGS, a kernel fault aborts the JVM after its dump; add skip_abort, "
                    + "or unset CUDA_ENABLE_COREDUMP_ON_EXCEPTION and use -D" + GpuCoredumps.PROPERTY + "=true");
            ok = false;
        }
        return ok;
    }

    private static boolean reportKernelCache(Lines out) {
        KernelCache cache;
        try {
            cache = KernelCache.defaultCache();
        } catch (IllegalArgumentException e) {
            out.println("  kernel cache:  WRONG: " + e.getMessage());
            return false;
        }
        Optional<Path> directory = cache.directory();
        if (directory.isEmpty()) {
            out.println("  kernel cache:  off (" + KernelCache.SWITCH_PROPERTY + "=off)");
            return true;
        }
        Path dir = directory.get();
        String cap = ", least recently used entries evicted over " + cache.maxBytes() + " bytes ("
                + KernelCache.MAX_BYTES_PROPERTY + ")";
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            // Not created here: looking must change nothing. The first compile that writes an entry makes it.
            Optional<String> problem = creationProblem(dir);
            if (problem.isPresent()) {
                reportNotWritable(out, dir, problem.get());
                return false;
            }
            out.println("  kernel cache:  " + dir + " (not created yet: the first compile makes it, mode 0700)" + cap);
            return true;
        }
        // It exists, so this checks it as a compile would without creating anything.
        Optional<String> refused;
        try {
            refused = cache.refusal();
        } catch (IOException e) {
            refused = Optional.of(e.toString()); // removed since it was seen
        }
        if (refused.isPresent()) {
            out.println("  kernel cache:  " + dir + " NOT USED: " + refused.get());
            out.println("                 NVRTC output will not be cached: fix the directory, set -D"
                    + KernelCache.DIRECTORY_PROPERTY + " to a private directory, or -D" + KernelCache.SWITCH_PROPERTY
                    + "=off");
            return false;
        }
        Optional<String> problem = writeProblem(dir);
        if (problem.isPresent()) {
            reportNotWritable(out, dir, problem.get());
            return false;
        }
        out.println("  kernel cache:  " + dir + " (writable)"
                + cache.keyFile().map(key -> ", entries authenticated with the key in " + key).orElse("") + cap);
        return true;
    }

    private static void reportNotWritable(Lines out, Path dir, String problem) {
        out.println("  kernel cache:  " + dir + " NOT WRITABLE (" + problem + ")");
        out.println("                 NVRTC output will not be cached: set -D" + KernelCache.DIRECTORY_PROPERTY
                + " to a writable directory, or -D" + KernelCache.SWITCH_PROPERTY + "=off");
    }

    /**
     * Why the directory, which does not exist, could not be made: its nearest existing ancestor is
     * not a directory or not writable (by access(2), which also knows read-only mounts and root).
     */
    private static Optional<String> creationProblem(Path dir) {
        Path ancestor = dir.getParent();
        while (ancestor != null && !Files.exists(ancestor)) {
            ancestor = ancestor.getParent();
        }
        if (ancestor == null) {
            return Optional.of("no directory above it exists");
        }
        if (!Files.isDirectory(ancestor)) {
            return Optional.of(ancestor + " is not a directory");
        }
        if (!Files.isWritable(ancestor)) {
            return Optional.of(ancestor + ", where it would be made, is not writable");
        }
        return Optional.empty();
    }

    /**
     * Why entries cannot be written in {@code dir}, found the way the cache would find it: by
     * creating a file in it (removed again). Permission bits alone would not tell, e.g. for root
     * or on a read-only mount.
     */
    private static Optional<String> writeProblem(Path dir) {
        try {
            Files.delete(Files.createTempFile(dir, "doctor-", ".probe"));
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of(e.toString());
        }
    }

    /** Prints the device pool, leak tracking and out-of-memory ladder settings; returns how many need attention. */
    private static int reportContextOptions(Lines out) {
        DevicePoolOptions pool;
        try {
            pool = DevicePoolOptions.fromSystemProperties();
        } catch (IllegalArgumentException e) {
            out.println("  device pool:   WRONG: " + e.getMessage());
            out.println("                 until it is fixed, opening a context will fail with this message");
            out.println("  leak tracking: not checked until the device pool setting is fixed");
            out.println("  oom ladder:    not checked until the device pool setting is fixed");
            return 1;
        }
        out.println("  device pool:   " + (pool.maxRetainedBytes() == 0 ? "off (every allocation goes to the driver)"
                : "keeps up to " + pool.maxRetainedBytes() + " bytes for reuse")
                + "; call-site profiling " + onOff(pool.profileCallSites()));
        ContextOptions options;
        try {
            // The pool's settings were read above, so what fails here is the rest: leak tracking,
            // or the out-of-memory ladder, which the message names.
            options = ContextOptions.defaults();
        } catch (IllegalArgumentException e) {
            if (e.getMessage().contains(GpuCoredumps.PROPERTY)) {
                // Reported under its own name (reportCoredumps); the switches read before it are fine.
                out.println("  leak tracking: not checked until the GPU coredump setting is fixed");
                out.println("  oom ladder:    not checked until the GPU coredump setting is fixed");
                return 0;
            }
            boolean ladder = e.getMessage().contains(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY);
            out.println((ladder ? "  oom ladder:    WRONG: " : "  leak tracking: WRONG: ") + e.getMessage());
            out.println("                 until it is fixed, opening a context with ContextOptions.defaults() will fail");
            return 1;
        }
        out.println("  leak tracking: " + onOff(options.leakTracking()));
        out.println("  oom ladder:    " + (options.outOfMemoryLadder()
                ? "on (an allocation that runs out of memory frees, trims and synchronizes, then tries again)"
                : "off (an allocation that runs out of memory fails at once)"));
        return 0;
    }

    private static String onOff(boolean on) {
        return on ? "on" : "off";
    }

    private static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    }

    private static String indent(String text) {
        return "         " + text.replace("\n", "\n         ");
    }
}
