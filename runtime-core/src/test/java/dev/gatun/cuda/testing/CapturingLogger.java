package dev.gatun.cuda.testing;

import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/**
 * A logger of {@link CapturingLogProvider}: records INFO and above in {@link LogCapture}.
 * DEBUG and TRACE stay disabled, as with slf4j-simple's default level, so that the tests run
 * the library's code paths as a default deployment does; a test that asserts a DEBUG line turns
 * DEBUG on for its logger alone ({@link LogCapture#enableDebug}).
 */
final class CapturingLogger extends LegacyAbstractLogger {

    CapturingLogger(String name) {
        this.name = name;
    }

    @Override
    public boolean isTraceEnabled() {
        return false;
    }

    @Override
    public boolean isDebugEnabled() {
        return LogCapture.debugEnabled(name);
    }

    @Override
    public boolean isInfoEnabled() {
        return true;
    }

    @Override
    public boolean isWarnEnabled() {
        return true;
    }

    @Override
    public boolean isErrorEnabled() {
        return true;
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(
            Level level, Marker marker, String pattern, Object[] arguments, Throwable throwable) {
        String message = MessageFormatter.basicArrayFormat(pattern, arguments);
        LogCapture.record(new LogCapture.Event(name, level, message, throwable));
    }
}
