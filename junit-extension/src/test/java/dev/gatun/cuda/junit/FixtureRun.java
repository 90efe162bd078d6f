package dev.gatun.cuda.junit;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.EngineFilter;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs a fixture class (a static nested class, which Surefire leaves alone) through a JUnit
 * launcher of its own, with chosen configuration parameters, and keeps what happened to the
 * class and to each of its test methods.
 */
final class FixtureRun {

    /** SUCCESSFUL, FAILED or ABORTED with what was thrown, or SKIPPED with the reason. */
    record Outcome(String status, String reason, Throwable thrown) {

        /** The failure's message, with its causes' and suppressed exceptions' (what a report shows). */
        String failure() {
            if (thrown == null) {
                fail("expected a failure, but the outcome is " + this);
            }
            StringBuilder all = new StringBuilder();
            append(all, thrown);
            return all.toString();
        }

        private static void append(StringBuilder all, Throwable t) {
            all.append(t).append('\n');
            for (Throwable s : t.getSuppressed()) {
                append(all, s);
            }
            if (t.getCause() != null) {
                append(all, t.getCause());
            }
        }
    }

    private final Map<String, Outcome> outcomes = new ConcurrentHashMap<>();

    private FixtureRun() {
    }

    /** Runs {@code fixture} over the simulated GPU {@link SimulatedGpu#use} chose. */
    static FixtureRun simulated(Class<?> fixture, String... parameters) {
        return run(fixture, GpuExtension.CUDA_SUPPLIER_PARAMETER, SimulatedGpu.class.getName(), parameters);
    }

    /** Runs {@code fixture} as on a machine without a driver. */
    static FixtureRun withoutGpu(Class<?> fixture, String... parameters) {
        return run(fixture, GpuExtension.CUDA_SUPPLIER_PARAMETER, NoGpu.class.getName(), parameters);
    }

    /** {@code parameters}: configuration parameter names and values, alternating. */
    static FixtureRun run(Class<?> fixture, String supplierKey, String supplier, String... parameters) {
        Map<String, String> config = new HashMap<>();
        config.put(supplierKey, supplier);
        // The fixtures' own outcomes are what the test reads: the ERROR check that every test
        // of this module gets would fail a fixture for an error it provoked on purpose.
        config.put("junit.jupiter.extensions.autodetection.enabled", "false");
        for (int i = 0; i < parameters.length; i += 2) {
            config.put(parameters[i], parameters[i + 1]);
        }
        FixtureRun run = new FixtureRun();
        LauncherFactory.create().execute(LauncherDiscoveryRequestBuilder.request()
                .selectors(DiscoverySelectors.selectClass(fixture))
                .filters(EngineFilter.includeEngines("junit-jupiter"))
                .configurationParameters(config)
                .build(), run.listener());
        return run;
    }

    private TestExecutionListener listener() {
        return new TestExecutionListener() {
            @Override
            public void executionSkipped(TestIdentifier test, String reason) {
                record(test, new Outcome("SKIPPED", reason, null));
            }

            @Override
            public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                record(test, new Outcome(result.getStatus().name(), null, result.getThrowable().orElse(null)));
            }
        };
    }

    private void record(TestIdentifier test, Outcome outcome) {
        TestSource source = test.getSource().orElse(null);
        if (source instanceof MethodSource m) {
            outcomes.put(m.getMethodName(), outcome);
        } else if (source instanceof ClassSource c) {
            outcomes.put(c.getJavaClass().getSimpleName(), outcome);
        }
    }

    /** What happened to the test method, or the fixture class, of this name; fails when it did not run. */
    Outcome of(String name) {
        Outcome o = outcomes.get(name);
        if (o == null) {
            fail("no outcome for " + name + "; the run reported " + outcomes);
        }
        return o;
    }
}
