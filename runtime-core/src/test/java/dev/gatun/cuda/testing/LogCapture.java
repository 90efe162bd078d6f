package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.fail;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.internal.driver.Checked;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.event.Level;

/**
 * The log events of this test JVM, as recorded by {@link CapturingLogProvider}: tests that
 * provoke a failure on purpose assert here that the library logged it, instead of printing it.
 *
 * <p>One store for the whole JVM, since the library logs from any thread (the Cleaner's
 * included): a test calls {@link #clear()} before provoking the failure, then
 * {@link #expect(Level, Class, String)} with a fragment that names what it provoked (an owner's
 * description, a driver function), so that an event of an earlier test that arrives late does
 * not satisfy it.
 *
 * <p>{@link UnexpectedErrors} (registered for every test) clears the store before each test
 * and fails a test that logged an ERROR it did not {@link #expect}.
 */
public final class LogCapture {

    /** One logging call: the logger's name, the level, the formatted message, the throwable if any. */
    public record Event(String logger, Level level, String message, Throwable throwable) {

        /** Whether this event has {@code level}, comes from the logger named {@code logger}, and says every one of {@code fragments}. */
        public boolean matches(Level level, String logger, String... fragments) {
            return this.level == level && this.logger.equals(logger) && Stream.of(fragments).allMatch(message::contains);
        }

        @Override
        public String toString() {
            return level + " " + logger + " - " + message + (throwable == null ? "" : " [" + throwable + "]");
        }
    }

    private static final ConcurrentLinkedQueue<Event> EVENTS = new ConcurrentLinkedQueue<>();
    /** The events a test asserted with {@link #expect}. */
    private static final Set<Event> EXPECTED = ConcurrentHashMap.newKeySet();
    /** The loggers whose DEBUG events are recorded. */
    private static final Set<String> DEBUG = ConcurrentHashMap.newKeySet();

    private LogCapture() {}

    static void record(Event event) {
        EVENTS.add(event);
    }

    /** The events recorded since the last {@link #clear()}, oldest first. */
    public static List<Event> events() {
        return List.copyOf(EVENTS);
    }

    /** Forgets every event recorded so far, and records DEBUG events of no logger. */
    public static void clear() {
        EVENTS.clear();
        EXPECTED.clear();
        DEBUG.clear();
    }

    /** Records the DEBUG events of the logger named {@code logger} too, until the next {@link #clear()}. */
    public static void enableDebug(String logger) {
        DEBUG.add(logger);
    }

    static boolean debugEnabled(String logger) {
        return DEBUG.contains(logger);
    }

    /** The ERROR events recorded since the last {@link #clear()} that no {@link #expect} matched. */
    public static List<Event> unexpectedErrors() {
        return EVENTS.stream().filter(e -> e.level() == Level.ERROR && !EXPECTED.contains(e)).toList();
    }

    /** The recorded events with {@code level}, from {@code logger}, whose message contains every one of {@code fragments}. */
    public static List<Event> find(Level level, Class<?> logger, String... fragments) {
        return find(level, logger.getName(), fragments);
    }

    /** As {@link #find(Level, Class, String...)}, for a logger whose class a test cannot name (another module's internals). */
    public static List<Event> find(Level level, String logger, String... fragments) {
        return EVENTS.stream().filter(e -> e.matches(level, logger, fragments)).toList();
    }

    /**
     * The first recorded event with {@code level}, from {@code logger}, whose message contains
     * every one of {@code fragments}; fails the test, listing what was logged, when there is none.
     * Every event it matches counts as expected (see {@link #unexpectedErrors()}).
     */
    public static Event expect(Level level, Class<?> logger, String... fragments) {
        return expect(level, logger.getName(), fragments);
    }

    /** The ERROR logged when {@code firstError}, a sticky error, poisoned its context. */
    public static Event expectPoisonedBy(CudaException firstError) {
        return expect(Level.ERROR, Checked.class,
                "context poisoned by a sticky error; every later call on it will fail: " + firstError.getMessage());
    }

    /** As {@link #expect(Level, Class, String...)}, for a logger whose class a test cannot name (another module's internals). */
    public static Event expect(Level level, String logger, String... fragments) {
        List<Event> found = find(level, logger, fragments);
        if (found.isEmpty()) {
            fail("expected a " + level + " from " + logger + " saying \""
                    + String.join("\" and \"", fragments) + "\"; logged:\n"
                    + EVENTS.stream().map(Event::toString).collect(Collectors.joining("\n")));
        }
        EXPECTED.addAll(found);
        return found.getFirst();
    }
}
