package dev.gatun.cuda.testing;

import java.util.Set;

/**
 * Whether a thread waits for another one rather than working: blocked on a monitor, parked on a
 * lock or condition, or spinning in a back-off loop (yielding or sleeping). Interleaving tests
 * and the {@link ScheduleExplorer} use it to tell "this step cannot go on until the thread I hold
 * inside a driver call moves" (a lock or in-flight count a fix added) from "this step is still
 * running", without knowing which production lock it is.
 */
public final class ThreadWaits {

    /** Frames at the top of a spinning wait's stack: a back-off loop shows one of them most of the time. */
    private static final Set<String> SPIN_FRAMES = Set.of("yield", "yield0", "onSpinWait", "sleep", "sleep0",
            "sleepNanos", "sleepNanos0");

    private ThreadWaits() {
    }

    /**
     * Whether {@code t} looks like it waits: BLOCKED, WAITING or TIMED_WAITING, or RUNNABLE with
     * a back-off call ({@code Thread.yield}, {@code Thread.onSpinWait}, {@code Thread.sleep}) on
     * top of its stack. A false answer proves nothing; callers sample it repeatedly.
     */
    public static boolean looksWaiting(Thread t) {
        Thread.State state = t.getState();
        if (state == Thread.State.BLOCKED || state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
            return true;
        }
        if (state != Thread.State.RUNNABLE) {
            return false;
        }
        StackTraceElement[] stack = t.getStackTrace();
        return stack.length > 0 && stack[0].getClassName().equals("java.lang.Thread")
                && SPIN_FRAMES.contains(stack[0].getMethodName());
    }
}
