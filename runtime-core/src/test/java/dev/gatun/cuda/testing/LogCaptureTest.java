package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

class LogCaptureTest {

    private static final Logger LOG = LoggerFactory.getLogger(LogCaptureTest.class);

    @Test
    void anEventIsRecordedFormattedWithItsThrowableInsteadOfPrinted() {
        IllegalStateException cause = new IllegalStateException("boom");
        LOG.warn("freeing {} failed with {}", "Stream#1", 700, cause);
        LOG.debug("below the default level: {}", "not recorded");

        LogCapture.Event event = LogCapture.expect(Level.WARN, LogCaptureTest.class, "freeing Stream#1 failed with 700");
        assertEquals("freeing Stream#1 failed with 700", event.message());
        assertSame(cause, event.throwable());
        assertEquals(List.of(event), LogCapture.events(), "DEBUG is off, as with slf4j-simple's default");
    }

    @Test
    void expectFailsListingWhatWasLogged() {
        LOG.info("something else");
        AssertionFailedError e = assertThrows(AssertionFailedError.class,
                () -> LogCapture.expect(Level.INFO, LogCaptureTest.class, "what the test wanted"));
        assertEquals(true, e.getMessage().contains("INFO " + LogCaptureTest.class.getName() + " - something else"),
                e.getMessage());
    }

    @Test
    void anErrorTheTestDidNotExpectFailsIt() {
        UnexpectedErrors check = new UnexpectedErrors();
        LOG.error("Leaking {}", "Event#3");
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check.afterEach(null));
        assertEquals(true, e.getMessage().contains("Leaking Event#3"), e.getMessage());

        LogCapture.expect(Level.ERROR, LogCaptureTest.class, "Leaking Event#3");
        check.afterEach(null); // expected now: passes
    }
}
