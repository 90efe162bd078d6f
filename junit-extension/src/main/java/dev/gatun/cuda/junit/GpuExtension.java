package dev.gatun.cuda.junit;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.Gatun;
import dev.gatun.cuda.Stream;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * The extension behind {@link RequiresGpu}; register it directly ({@code @ExtendWith}) only
 * where the annotation cannot go.
 *
 * <ul>
 *   <li><b>Condition.</b> Without a CUDA driver or device, every test it covers is skipped with
 *       the loader's whole reason, every path it tried included (logged at WARN per test, and
 *       printed once per JVM on standard error, where Surefire's console shows it); with
 *       {@value #REQUIRED_PARAMETER}{@code =true} (a JUnit configuration parameter or a system
 *       property) it fails instead, with the reason and Gatun's diagnosis of the JVM
 *       ({@link dev.gatun.cuda.doctor.Doctor}). A test whose parameters name a device the driver
 *       does not report is skipped.
 *   <li><b>Parameters.</b> {@link Device}, {@link CudaContext} and {@link Stream} parameters of
 *       test methods, {@code @BeforeEach} and {@code @AfterEach} methods are injected; device 0,
 *       or the one {@link OnDevice} names. The context is the device's
 *       ({@link Device#context}), opened with leak tracking if it is not open yet, and stays
 *       open for the JVM's life. The stream is a new one per test and device, shared by the
 *       test's methods and closed after the last of them. Constructors and {@code @BeforeAll}
 *       methods can take a {@code Device} or a {@code CudaContext}, not a {@code Stream}.
 *   <li><b>Leaks.</b> When a test method or its {@code @BeforeEach} takes a context (or a stream)
 *       of a device, the owners live in that context are noted before the first such parameter
 *       is made; after the test and its {@code @AfterEach} methods, an owner live beyond those
 *       fails the test, named with where it was created (the extension first reaps, and, if
 *       something is still live, synchronizes the context, since retirement may still hold a
 *       module for a closed kernel). Owners made in {@code @BeforeAll} or a constructor are
 *       part of the baseline.
 *   <li><b>Sticky errors.</b> After each test, every context the extension has handed out is
 *       asked whether a sticky error poisoned it. The test that poisoned one fails, saying so
 *       (with the first error as the cause); later tests that take that device, and later tests
 *       that take no device at all, are skipped with that reason, since only a new process
 *       recovers the device.
 * </ul>
 */
public final class GpuExtension
        implements ExecutionCondition, ParameterResolver, AfterEachCallback, TestExecutionExceptionHandler {

    /**
     * JUnit configuration parameter (or system property): {@code true} makes a missing GPU a
     * failure; {@code false} or unset, a skip. Any other value fails every test it covers,
     * saying so.
     */
    public static final String REQUIRED_PARAMETER = "gatun.gpu.required";

    /**
     * JUnit configuration parameter (or system property): the name of a public class with a
     * public no-argument constructor implementing {@code Supplier<dev.gatun.cuda.Cuda>}, which
     * gives the tests their {@code Cuda} instead of {@code Cuda.system()}: a simulated driver,
     * say (runtime-core's test jar has one). A {@code CudaUnavailableException} from it means
     * "no GPU".
     */
    public static final String CUDA_SUPPLIER_PARAMETER = "gatun.gpu.cudaSupplier";

    static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(GpuExtension.class);

    private static final Set<Class<?>> INJECTED = Set.of(Device.class, CudaContext.class, Stream.class);

    /** Made by JUnit. */
    public GpuExtension() {
    }

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        // Read before anything else, GPU or not: a misspelt value must fail the run, not quietly
        // skip every GPU test of a GPU CI that lost its GPU.
        boolean required = Gatun.readFlag("JUnit configuration parameter (or system property) " + REQUIRED_PARAMETER,
                context.getConfigurationParameter(REQUIRED_PARAMETER).orElse(null), false);
        GpuRun run = GpuRun.of(context);
        if (!run.available()) {
            if (required) {
                throw run.requiredButUnavailable();
            }
            return ConditionEvaluationResult.disabled(run.skip(context.getDisplayName()));
        }
        Optional<Method> method = context.getTestMethod();
        if (method.isEmpty()) {
            return ConditionEvaluationResult.enabled("CUDA driver loaded, " + run.cuda().deviceCount() + " device(s)");
        }
        Set<Integer> devices = devicesNamedBy(method.get());
        int count = run.cuda().deviceCount();
        for (int ordinal : devices) {
            if (ordinal >= count) {
                return ConditionEvaluationResult.disabled("the test takes device " + ordinal + ", but the driver reports "
                        + count + (count == 1 ? " device" : " devices"));
            }
        }
        // A test that takes no device may use any: a poisoned one skips it too.
        return run.poisoning(devices)
                .map(p -> ConditionEvaluationResult.disabled(p.skipReason()))
                .orElseGet(() -> ConditionEvaluationResult.enabled("no device the test may use is poisoned"));
    }

    /** The ordinals of the devices the method's injected parameters belong to. */
    private static Set<Integer> devicesNamedBy(Method method) {
        Set<Integer> ordinals = new TreeSet<>();
        for (Parameter p : method.getParameters()) {
            if (INJECTED.contains(p.getType())) {
                OnDevice on = p.getAnnotation(OnDevice.class);
                ordinals.add(on == null ? 0 : on.value());
            }
        }
        return ordinals;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return INJECTED.contains(parameter.getParameter().getType());
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        int ordinal = parameter.findAnnotation(OnDevice.class).map(OnDevice::value).orElse(0);
        GpuRun run = GpuRun.of(context);
        if (!run.available()) {
            throw new ParameterResolutionException("cannot inject a " + type.getSimpleName() + ": "
                    + run.unavailableReason());
        }
        if (ordinal < 0 || ordinal >= run.cuda().deviceCount()) {
            throw new ParameterResolutionException("cannot inject a " + type.getSimpleName() + " of device " + ordinal
                    + ": the driver reports " + run.cuda().deviceCount() + " device(s)");
        }
        if (type == Device.class) {
            return run.cuda().device(ordinal);
        }
        // Per test: a parameter of a test method or of its @BeforeEach/@AfterEach methods, not
        // of a constructor (which JUnit may call in a test's context too) or a @BeforeAll method.
        boolean perTest = context.getTestMethod().isPresent() && parameter.getDeclaringExecutable() instanceof Method;
        if (type == Stream.class && !perTest) {
            throw new ParameterResolutionException("a Stream is injected into test methods and their @BeforeEach and "
                    + "@AfterEach methods only, and closed after the test; in a constructor or a @BeforeAll method, "
                    + "take the CudaContext and create (and close) the stream yourself");
        }
        CudaContext ctx = run.context(ordinal);
        if (!perTest) {
            return ctx;
        }
        TestScope scope = TestScope.of(context);
        scope.baseline(ctx);
        return type == CudaContext.class ? ctx : scope.stream(ctx);
    }

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable thrown) throws Throwable {
        AssertionError poisoned = poisonedDuring(context, thrown);
        throw poisoned != null ? poisoned : thrown;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        List<Throwable> failures = new ArrayList<>();
        TestScope scope = TestScope.find(context);
        if (scope != null) {
            scope.closeStreams(failures);
        }
        AssertionError poisoned = poisonedDuring(context, null);
        if (poisoned != null) {
            failures.addFirst(poisoned);
        } else if (scope != null) {
            for (LeakCheck check : scope.checks()) {
                try {
                    String leaked = check.after();
                    if (leaked != null) {
                        failures.add(new AssertionError(leaked));
                    }
                } catch (RuntimeException e) {
                    failures.add(e);
                }
            }
        }
        if (!failures.isEmpty()) {
            Throwable first = failures.getFirst();
            failures.subList(1, failures.size()).forEach(first::addSuppressed);
            if (first instanceof RuntimeException r) {
                throw r;
            }
            throw (AssertionError) first; // the only other kind collected
        }
    }

    /**
     * The failure for the contexts a sticky error poisoned during this test (noting them, so
     * later tests on their devices are skipped), or null when none was.
     *
     * @param thrown what the test threw, which becomes the cause; else the first error
     */
    private static AssertionError poisonedDuring(ExtensionContext context, Throwable thrown) {
        String test = context.getRequiredTestClass().getSimpleName() + "." + context.getDisplayName();
        List<GpuRun.Poisoning> found = GpuRun.of(context).notePoisoned(test);
        if (found.isEmpty()) {
            return null;
        }
        String devices = found.stream().map(p -> "device " + p.ordinal() + "'s context was poisoned by a sticky error "
                + "during this test: " + p.firstError().getMessage()).collect(Collectors.joining("; "));
        return new AssertionError(devices + ". Later tests on " + (found.size() == 1 ? "that device" : "those devices")
                + " are skipped: only a new process recovers a device", thrown != null ? thrown : found.getFirst().firstError());
    }
}
