package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that logged an ERROR it did not assert with {@link LogCapture#expect}: since the
 * log is no longer printed, an error nobody expected would otherwise pass unseen. Registered for
 * every Jupiter test through {@code META-INF/services/org.junit.jupiter.api.extension.Extension}
 * and {@code junit.jupiter.extensions.autodetection.enabled} in junit-platform.properties.
 */
public final class UnexpectedErrors implements BeforeEachCallback, AfterEachCallback {

    @Override
    public void beforeEach(ExtensionContext context) {
        LogCapture.clear();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        List<LogCapture.Event> unexpected = LogCapture.unexpectedErrors();
        if (!unexpected.isEmpty()) {
            fail("the test logged " + unexpected.size() + " ERROR(s) it did not expect; assert the expected ones with "
                    + "LogCapture.expect:\n" + unexpected.stream().map(LogCapture.Event::toString)
                            .collect(Collectors.joining("\n")));
        }
    }
}
