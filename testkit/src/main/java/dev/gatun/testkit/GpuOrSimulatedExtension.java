package dev.gatun.testkit;

import dev.gatun.cuda.CudaUnavailableException;
import java.lang.reflect.Method;
import java.util.Locale;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The extension behind {@link GpuOrSimulated}; register it directly ({@code @ExtendWith}) only
 * where the annotation cannot go.
 *
 * <ul>
 *   <li><b>Target.</b> {@link TestTarget#SETTING} (a JUnit configuration parameter, or a system
 *       property) is read when a test first takes a {@link GpuUnderTest}: {@code auto} (the
 *       default) runs on device 0 of the real driver where Gatun's loader finds one that reports
 *       a device, else on the simulator; {@code simulated} and {@code gpu} force either. Any other
 *       value fails the test, naming the setting. With {@code gpu} and no usable GPU, the test
 *       fails with the loader's reason: a GPU CI that lost its GPU must not pass on the simulator.
 *   <li><b>Parameters.</b> A {@link GpuUnderTest} parameter of a test method, or of its
 *       {@code @BeforeEach} and {@code @AfterEach} methods, is the test's own GPU, the same object
 *       in each. A {@link SimulatedGpu} parameter is always a simulated one. Constructors and
 *       {@code @BeforeAll} methods cannot take either: a GPU belongs to one test.
 *   <li><b>After the test.</b> Once its {@code @AfterEach} methods have run, the GPU is
 *       {@linkplain GpuUnderTest#close() closed}: the faults are cleared, the context is closed,
 *       and an owner left open (or, on the simulator, work that failed as the GPU ran it) fails
 *       the test.
 * </ul>
 */
public final class GpuOrSimulatedExtension implements ParameterResolver, AfterEachCallback {

    private static final Logger LOG = LoggerFactory.getLogger(GpuOrSimulatedExtension.class);
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(GpuOrSimulatedExtension.class);

    /** Made by JUnit. */
    public GpuOrSimulatedExtension() {
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == GpuUnderTest.class || type == SimulatedGpu.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        if (context.getTestMethod().isEmpty() || !(parameter.getDeclaringExecutable() instanceof Method)) {
            throw new ParameterResolutionException("a " + type.getSimpleName() + " belongs to one test: take it in a "
                    + "test method or its @BeforeEach and @AfterEach methods, not in a constructor or a @BeforeAll method");
        }
        ExtensionContext.Store store = context.getStore(NAMESPACE);
        GpuUnderTest gpu = store.get(GpuUnderTest.class, GpuUnderTest.class);
        if (gpu == null) {
            gpu = open(type == SimulatedGpu.class ? TestTarget.SIMULATED : target(context));
            store.put(GpuUnderTest.class, gpu);
        }
        if (!type.isInstance(gpu)) {
            throw new ParameterResolutionException("this test already runs on " + gpu + " (" + TestTarget.SETTING
                    + " chose it for its GpuUnderTest); a test takes one GPU: a GpuUnderTest or a SimulatedGpu");
        }
        return gpu;
    }

    private static TestTarget target(ExtensionContext context) {
        try {
            return TestTarget.parse(context.getConfigurationParameter(TestTarget.SETTING).orElse(null));
        } catch (IllegalArgumentException e) {
            throw new ParameterResolutionException(e.getMessage(), e);
        }
    }

    private static GpuUnderTest open(TestTarget target) {
        GpuUnderTest gpu;
        try {
            gpu = GpuUnderTest.open(target);
        } catch (CudaUnavailableException | IllegalStateException e) {
            throw new ParameterResolutionException(TestTarget.SETTING + " is " + target.name().toLowerCase(Locale.ROOT)
                    + ", but there is no usable GPU: " + e.getMessage(), e);
        }
        LOG.debug("a test runs on the {} ({}={})", gpu, TestTarget.SETTING, target);
        return gpu;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        GpuUnderTest gpu = context.getStore(NAMESPACE).remove(GpuUnderTest.class, GpuUnderTest.class);
        if (gpu != null) {
            gpu.close();
        }
    }
}
