package dev.gatun.cuda.junit;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Why GPU tests are skipped, said once per JVM on standard error.
 *
 * <p>Surefire's console shows only {@code Skipped: N} for them: the reason reaches its
 * {@code TEST-*.xml} report, and the extension's WARN line reaches the console only where the
 * test class path has an SLF4J binding that prints. So this one line goes to {@code System.err}
 * directly, whatever the logging setup, as Testcontainers does when it finds no Docker: the one
 * place gatun-junit prints instead of logging. Once, not per test: the reason is the same for
 * every test of the JVM, and a suite of hundreds would bury the console in it.
 */
final class SkipNotice {

    private static final AtomicBoolean PRINTED = new AtomicBoolean();

    private SkipNotice() {
    }

    /** Prints {@code reason} unless this JVM has printed a skip notice already. */
    static void once(String reason) {
        if (PRINTED.compareAndSet(false, true)) {
            System.err.println("gatun-junit: GPU tests are skipped in this JVM: " + reason);
        }
    }
}
