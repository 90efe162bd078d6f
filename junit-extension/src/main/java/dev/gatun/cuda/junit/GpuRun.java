package dev.gatun.cuda.junit;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.doctor.Doctor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the GPU tests of one engine run share, kept in the root extension context's store: the
 * {@link Cuda} they use (or why there is none), the contexts handed out by device, and the
 * devices a sticky error has poisoned.
 */
final class GpuRun {

    /** Under the extension's name: that is the class a user sees registered. */
    private static final Logger log = LoggerFactory.getLogger(GpuExtension.class);

    /** The Cuda, or null when there is none. */
    private final Cuda cuda;
    /** Why there is no Cuda (null when there is): the skip reason, and the start of a required GPU's failure. */
    private final String unavailableReason;
    /** What made the Cuda unavailable: the loader's exception, or null when the driver loaded and reports no device. */
    private final CudaUnavailableException unavailable;
    /** The failure of a required GPU's absence, made on first need (it carries the doctor's report). */
    private IllegalStateException requiredButUnavailable;
    private final Map<Integer, CudaContext> contexts = new ConcurrentHashMap<>();
    private final Map<Integer, Poisoning> poisoned = new ConcurrentHashMap<>();

    /** A device whose context a sticky error poisoned: which test it happened in, and the first error. */
    record Poisoning(int ordinal, String test, CudaException firstError) {

        String skipReason() {
            return "device " + ordinal + "'s context was poisoned by a sticky error in an earlier test (" + test + "): "
                    + firstError.getMessage() + "; only a new process recovers the device";
        }
    }

    private GpuRun(Cuda cuda, String unavailableReason, CudaUnavailableException unavailable) {
        this.cuda = cuda;
        this.unavailableReason = unavailableReason;
        this.unavailable = unavailable;
    }

    /** This engine run's, made on first use from the configuration parameters. */
    static GpuRun of(ExtensionContext context) {
        return context.getRoot().getStore(GpuExtension.NAMESPACE)
                .getOrComputeIfAbsent(GpuRun.class, _ -> load(context), GpuRun.class);
    }

    private static GpuRun load(ExtensionContext context) {
        Supplier<?> supplier = context.getConfigurationParameter(GpuExtension.CUDA_SUPPLIER_PARAMETER)
                .<Supplier<?>>map(GpuRun::instantiate).orElse(Cuda::system);
        Object supplied;
        try {
            supplied = supplier.get();
        } catch (CudaUnavailableException e) {
            return new GpuRun(null, "no CUDA driver/GPU: " + summary(e) + visibleDevices(), e);
        }
        if (!(supplied instanceof Cuda cuda)) {
            throw new IllegalArgumentException("the supplier named by " + GpuExtension.CUDA_SUPPLIER_PARAMETER
                    + " returned " + supplied + " instead of a dev.gatun.cuda.Cuda");
        }
        if (cuda.deviceCount() == 0) {
            return new GpuRun(null, "the CUDA driver (" + cuda.driverLibrary() + ") reports no device" + visibleDevices(),
                    null);
        }
        return new GpuRun(cuda, null, null);
    }

    /**
     * The driver's device filter, when this process has one: with {@code CUDA_VISIBLE_DEVICES}
     * empty (a common way to keep a job off the GPU) the driver finds no device, whichever way it
     * says so (no device, or {@code cuInit} failing with {@code CUDA_ERROR_NO_DEVICE}).
     */
    private static String visibleDevices() {
        String filter = System.getenv("CUDA_VISIBLE_DEVICES");
        return filter == null ? "" : " (CUDA_VISIBLE_DEVICES is '" + filter + "': the driver shows only the devices it lists)";
    }

    private static Supplier<?> instantiate(String className) {
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        try {
            // Loaded without running its static initializer: a class that is not a Supplier is
            // refused before any of its code runs.
            Class<?> type = Class.forName(className, false, loader != null ? loader : GpuRun.class.getClassLoader());
            if (!Supplier.class.isAssignableFrom(type)) {
                throw new IllegalArgumentException(className + " does not implement java.util.function.Supplier");
            }
            return (Supplier<?>) type.getConstructor().newInstance();
        } catch (ReflectiveOperationException | IllegalArgumentException e) {
            throw new IllegalArgumentException("configuration parameter " + GpuExtension.CUDA_SUPPLIER_PARAMETER + " = "
                    + className + " cannot be used (" + e + "); name a public class implementing "
                    + "Supplier<dev.gatun.cuda.Cuda> with a public no-argument constructor", e);
        }
    }

    /**
     * The loader's whole message on one line, every place it tried included: the skip reason is
     * all a user sees when no SLF4J binding is on the test class path (the usual case), so it
     * must say where the driver was looked for.
     */
    private static String summary(CudaUnavailableException unavailable) {
        List<String> lines = unavailable.getMessage().lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        if (lines.isEmpty()) {
            return "";
        }
        String first = lines.get(0);
        List<String> rest = lines.subList(1, lines.size());
        return rest.isEmpty() ? first : first + " " + String.join("; ", rest);
    }

    boolean available() {
        return cuda != null;
    }

    /** The Cuda of this run; only when {@link #available()}. */
    Cuda cuda() {
        if (cuda == null) {
            throw new IllegalStateException("no GPU in this run: " + unavailableReason);
        }
        return cuda;
    }

    /** Why there is no GPU in this run; only when not {@link #available()}. */
    String unavailableReason() {
        return unavailableReason;
    }

    /**
     * What a required GPU's absence throws: the reason, then Gatun's diagnosis of this process
     * ({@code gatun doctor}'s report: versions, driver, devices, NVRTC, settings), with the
     * loader's exception, if there was one, as the cause. Made once per run.
     */
    synchronized IllegalStateException requiredButUnavailable() {
        if (requiredButUnavailable == null) {
            StringBuilder message = new StringBuilder(GpuExtension.REQUIRED_PARAMETER + " is true, but there is no usable GPU: "
                    + unavailableReason + System.lineSeparator() + "Gatun's diagnosis of this JVM "
                    + "(dev.gatun.cuda.doctor.Doctor):" + System.lineSeparator());
            Doctor.diagnose(message);
            requiredButUnavailable = new IllegalStateException(message.toString().stripTrailing(), unavailable);
        }
        return requiredButUnavailable;
    }

    /**
     * The reason a test is skipped without a GPU, with every place the loader tried; logged per
     * test as it is returned, and printed once per JVM on standard error ({@link SkipNotice}).
     */
    String skip(String test) {
        String reason = unavailableReason + "; GPU tests run only on a GPU host (" + GpuExtension.REQUIRED_PARAMETER
                + "=true makes this a failure)";
        log.warn("{} skipped: {}", test, reason);
        SkipNotice.once(reason);
        return reason;
    }

    /**
     * Device {@code ordinal}'s context, opened with leak tracking if it is not open yet (if it
     * is, whoever opened it chose its options, and it is used as it is).
     */
    CudaContext context(int ordinal) {
        var device = cuda().device(ordinal);
        CudaContext context;
        try {
            context = device.context(ContextOptions.defaults().withLeakTracking(true));
        } catch (IllegalStateException openWithOtherOptions) {
            context = device.context();
        }
        contexts.put(ordinal, context);
        return context;
    }

    /** The poisoning of any of {@code ordinals}, or of any device when {@code ordinals} is empty. */
    Optional<Poisoning> poisoning(Collection<Integer> ordinals) {
        if (ordinals.isEmpty()) {
            return poisoned.values().stream().findFirst();
        }
        return ordinals.stream().map(poisoned::get).filter(Objects::nonNull).findFirst();
    }

    /**
     * Records every context handed out that a sticky error has poisoned since the last call, as
     * poisoned in {@code test}; returns those.
     */
    synchronized List<Poisoning> notePoisoned(String test) {
        List<Poisoning> found = new ArrayList<>();
        contexts.forEach((ordinal, context) -> {
            if (!poisoned.containsKey(ordinal)) {
                context.diagnostics().poisonedBy().ifPresent(first -> {
                    Poisoning p = new Poisoning(ordinal, test, first);
                    poisoned.put(ordinal, p);
                    found.add(p);
                });
            }
        });
        return found;
    }
}
