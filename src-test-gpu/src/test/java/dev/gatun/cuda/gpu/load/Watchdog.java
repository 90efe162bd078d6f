package dev.gatun.cuda.gpu.load;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Bounds a multi-threaded run: waits for every worker, and when the bound passes first, fails
 * with the stacks of all threads (and the locks they hold or wait for), so that a deadlock
 * names itself instead of hanging the suite.
 */
public final class Watchdog {

    private Watchdog() {
    }

    /**
     * Waits for all {@code workers} within {@code bound} in total.
     *
     * @throws AssertionError past the bound, carrying a dump of every thread's stack; or when a
     *     worker threw, carrying that exception as its cause
     */
    public static void await(List<? extends Future<?>> workers, Duration bound) throws InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        for (int i = 0; i < workers.size(); i++) {
            try {
                workers.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("worker " + i + " of " + workers.size() + " has not finished within " + bound
                        + " (a deadlock or a hang); all threads:\n" + threadDump());
            } catch (ExecutionException e) {
                throw new AssertionError("worker " + i + " failed: " + e.getCause(), e.getCause());
            }
        }
    }

    /** Every live thread's name, state, the lock it waits for, its stack and the locks it holds. */
    public static String threadDump() {
        StringBuilder sb = new StringBuilder();
        var threads = ManagementFactory.getThreadMXBean();
        long[] deadlocked = threads.findDeadlockedThreads();
        if (deadlocked != null) {
            sb.append("deadlocked thread ids: ").append(java.util.Arrays.toString(deadlocked)).append('\n');
        }
        Map<Long, StackTraceElement[]> fullStacks = new java.util.HashMap<>();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            fullStacks.put(e.getKey().threadId(), e.getValue());
        }
        for (ThreadInfo info : threads.dumpAllThreads(true, true)) {
            sb.append('"').append(info.getThreadName()).append("\" id=").append(info.getThreadId()).append(' ')
                    .append(info.getThreadState());
            if (info.getLockName() != null) {
                sb.append(" waiting for ").append(info.getLockName());
                if (info.getLockOwnerName() != null) {
                    sb.append(" held by \"").append(info.getLockOwnerName()).append('"');
                }
            }
            sb.append('\n');
            // ThreadInfo.toString() cuts stacks at 8 frames; the full stack is what finds a hang.
            StackTraceElement[] stack = fullStacks.getOrDefault(info.getThreadId(), info.getStackTrace());
            for (StackTraceElement frame : stack) {
                sb.append("\tat ").append(frame).append('\n');
            }
            for (var monitor : info.getLockedMonitors()) {
                sb.append("\tholds ").append(monitor).append('\n');
            }
            for (var lock : info.getLockedSynchronizers()) {
                sb.append("\tholds ").append(lock).append('\n');
            }
        }
        return sb.toString();
    }
}
