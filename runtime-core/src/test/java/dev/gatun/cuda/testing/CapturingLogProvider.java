package dev.gatun.cuda.testing;

import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.NOPMDCAdapter;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The SLF4J provider of the CPU tests (registered in
 * {@code META-INF/services/org.slf4j.spi.SLF4JServiceProvider}): every event goes to
 * {@link LogCapture} instead of stdout/stderr, so that a passing build prints no log lines and
 * the tests that provoke failures on purpose assert on the warning or error they expect.
 */
public final class CapturingLogProvider implements SLF4JServiceProvider {

    private final ILoggerFactory loggers = CapturingLogger::new;
    private final IMarkerFactory markers = new BasicMarkerFactory();
    private final MDCAdapter mdc = new NOPMDCAdapter();

    @Override
    public ILoggerFactory getLoggerFactory() {
        return loggers;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return markers;
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return mdc;
    }

    @Override
    public String getRequestedApiVersion() {
        return "2.0.99";
    }

    @Override
    public void initialize() {
        // Nothing to set up: the loggers are stateless and the events live in LogCapture.
    }
}
