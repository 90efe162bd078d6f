package dev.gatun.cuda.testing;

import dev.gatun.cuda.internal.context.SwitchPoint;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Systematic exploration of how a few threads' steps can interleave, on the simulated driver: a
 * small scheduler behind an {@link Interposer} lets exactly one scenario thread go on to its next
 * step at a time, and enumerates the orders, depth first, one fresh run of the scenario per order
 * (stateless model checking, as CHESS does at synchronization granularity). A step is a driver
 * call or one of the stream protocol's {@link SwitchPoint}s, the Java steps on shared state
 * that no driver call separates (a use listing its stream, a close reading the list, the holds
 * and the deferral, the "unordered" flag, the fence taken before a capture...); those come
 * through the interposer too ({@link Interposer#interceptSwitchPoints()}), and
 * {@link #switchingAt} narrows them. After each run the scenario's check asserts its invariants (no
 * stale read, no simulator violation, no use after free, the holds right); the first run that
 * breaks one fails with the schedule that did and the number of schedules explored until then.
 *
 * <p>Orders are bounded by preemptions: switching away from a thread that could make its next
 * call counts one, switching from a thread that finished or waits does not. With a bound of
 * {@code k}, every order with at most {@code k} preemptions is explored (the bugs found in
 * practice need one or two), up to {@link #atMost} schedules.
 *
 * <p>A thread that the code under test makes wait on a Java lock (or a back-off loop) never
 * reaches its next driver call while the thread holding the lock is held here: the scheduler
 * sees it waiting ({@link ThreadWaits}) and lets another thread go, so orders a fix makes
 * impossible are skipped, not hung. Two steps that deadlock each other are reported as a
 * violation. Driver calls of threads outside the scenario (Gatun's dispatcher, the Cleaner) and
 * of the test's own thread (set-up and checks) pass through unscheduled.
 *
 * <p>Limits: threads switch only at driver calls, at switch points and where one waits, so a
 * race between two Java steps with neither between them is not explored: a new shared-state step
 * of the protocol needs its switch point ({@code SwitchPoint.X.reach()} just before the access).
 * Until 2026-12-06 there were no switch points; the race of a launch with its buffer's close
 * (review 2026-12-06, section 3.1) and the close/unhold deferral order went unseen for that reason.
 *
 * <p>Why not a general tool: on JDK 25, Lincheck 3.7's model checker reported a false "execution
 * has hung" inside the simulated driver after about 35 s for the first pair, and its
 * {@code runConcurrentTest} (threads the test starts) explored nothing (it missed a lost update it
 * finds on JDK 17). Fray 0.9.2 (tried again 2026-12-06: {@code fray-plugins-maven} and
 * {@code fray-junit} 0.9.2 resolve from Maven Central; a lost-update {@code @ConcurrencyTest} in a
 * scratch project, {@code mvn test -Dplugin.jdkPath=$JAVA_HOME}): its {@code prepare-fray} goal
 * runs {@code jlink --module-path $JAVA_HOME/jmods --add-modules ALL-MODULE-PATH} and fails with
 * "No module found in module path '/usr/lib/jvm/temurin-25-jdk-amd64/jmods'" (Temurin 25 ships no
 * jmods: jlink links from its run-time image, which works when no module path is given); without
 * {@code plugin.jdkPath} it downloads Corretto from outside Maven Central, which this machine cannot
 * reach, and no JDK 25 with jmods is in its package lists. jcstress 0.16 does run on JDK 25, on the
 * real classes without switch points (module {@code jcstress}, {@code -Pjcstress}): it stresses the
 * lock-free pairs by the million on every JVM mode, where this explores every order of a scenario's
 * steps; both are kept.
 */
public final class ScheduleExplorer {

    private static final Logger LOG = LoggerFactory.getLogger(ScheduleExplorer.class);
    /** The pseudo-call each thread waits at before its step begins, so that which step starts first is a choice too. */
    static final String START = "(start)";
    /** Samples, half a millisecond apart, that must all show a thread waiting before it counts as waiting. */
    private static final int WAIT_SAMPLES = 4;

    /** One thread of a scenario: its name and what it does. */
    public record Step(String name, Background.Step body) {
    }

    /** A scenario set up afresh for one schedule. */
    public interface Run {
        /** The interposer the run's Gatun is built on. */
        Interposer interposer();

        /** The threads to interleave, each run once. */
        List<Step> steps();

        /**
         * Asserts the scenario's invariants once every step ended (on the test's thread).
         *
         * @param failures what each step threw, in the order of {@link #steps()}; null for one that returned
         */
        void check(List<Throwable> failures) throws Exception;

        /** Releases what the run made (after its check, passed or not), so that thousands of runs hold nothing. */
        void close() throws Exception;

        /** A run of {@code steps} on {@code interposer}'s Gatun, checked by {@code check}, released by {@code close}. */
        static Run of(Interposer interposer, List<Step> steps, Check check, Cleanup close) {
            return new Run() {
                @Override
                public Interposer interposer() {
                    return interposer;
                }

                @Override
                public List<Step> steps() {
                    return steps;
                }

                @Override
                public void check(List<Throwable> failures) throws Exception {
                    check.check(failures);
                }

                @Override
                public void close() throws Exception {
                    close.close();
                }
            };
        }
    }

    /** {@link Run#check} as a function. */
    @FunctionalInterface
    public interface Check {
        void check(List<Throwable> failures) throws Exception;
    }

    /** {@link Run#close} as a function. */
    @FunctionalInterface
    public interface Cleanup {
        void close() throws Exception;
    }

    /**
     * What an exploration covered.
     *
     * @param schedules the runs made, each one order of the threads' driver calls
     * @param exhausted whether every order within the preemption bound was run (false: {@link #atMost} stopped it)
     * @param diverged runs whose replayed prefix could not be followed (a thread the prefix named was not ready)
     * @param millis the wall time of the whole exploration, for reports (never asserted)
     */
    public record Report(String scenario, int schedules, int preemptionBound, boolean exhausted, int diverged,
            long millis) {
        @Override
        public String toString() {
            return scenario + ": " + schedules + " schedules (at most " + preemptionBound + " preemptions"
                    + (exhausted ? ", all of them" : ", stopped at the limit") + (diverged > 0 ? ", " + diverged
                    + " diverged from their replayed prefix" : "") + ") in " + millis + " ms, no violation";
        }
    }

    private final String scenario;
    private int preemptions = 2;
    private int atMost = 2_000;
    private List<Integer> start = List.of();
    private Set<String> switchPoints = labels(EnumSet.allOf(SwitchPoint.class));

    private ScheduleExplorer(String scenario) {
        this.scenario = scenario;
    }

    /** An exploration of {@code scenario} (its name, in reports). */
    public static ScheduleExplorer of(String scenario) {
        return new ScheduleExplorer(scenario);
    }

    /** Explores orders with at most {@code bound} preemptions (default 2). */
    public ScheduleExplorer preemptions(int bound) {
        preemptions = bound;
        return this;
    }

    /**
     * Starts the depth-first search at {@code choices} (the thread index chosen at each decision, as
     * a failure reports them) instead of at the first schedule: replays a failing schedule first.
     */
    public ScheduleExplorer startAt(List<Integer> choices) {
        start = List.copyOf(choices);
        return this;
    }

    /**
     * Switches threads at driver calls and at {@code points} only, instead of at every
     * {@link SwitchPoint} (the default); an empty set explores driver-call orders alone.
     */
    public ScheduleExplorer switchingAt(Set<SwitchPoint> points) {
        switchPoints = labels(points);
        return this;
    }

    private static Set<String> labels(Set<SwitchPoint> points) {
        return points.stream().map(Interposer::label).collect(Collectors.toUnmodifiableSet());
    }

    /** Stops after {@code schedules} runs (default 2,000), reporting that it did. */
    public ScheduleExplorer atMost(int schedules) {
        atMost = schedules;
        return this;
    }

    /**
     * Runs {@code scenario} once per schedule, depth first, until every order within the bound ran,
     * the limit is reached, or a check fails.
     *
     * @throws AssertionError for the first schedule whose check fails (its cause), naming the
     *     schedule and how many were explored before it
     */
    public Report explore(Supplier<Run> world) {
        long began = System.nanoTime();
        List<Integer> prefix = start;
        int schedules = 0;
        int diverged = 0;
        while (true) {
            Run run = world.get();
            Schedule schedule = new Schedule(run, prefix);
            schedules++;
            Throwable broken = schedule.runAndCheck();
            if (schedule.diverged) {
                diverged++;
            }
            if (broken == null && schedule.closeFailure != null) {
                broken = schedule.closeFailure;
            } else if (broken != null && schedule.closeFailure != null) {
                broken.addSuppressed(schedule.closeFailure);
            }
            if (broken != null) {
                AssertionError e = new AssertionError(scenario + ": schedule " + schedules + " broke an invariant after "
                        + (schedules - 1) + " schedules without one (at most " + preemptions + " preemptions, "
                        + (System.nanoTime() - began) / 1_000_000 + " ms). Order of the steps (driver calls "
                        + "and <switch points>): " + schedule.describe() + " (replay: startAt(List.of("
                        + schedule.choices().stream().map(String::valueOf).collect(Collectors.joining(", ")) + ")))\n"
                        + broken, broken);
                LOG.info("{}: violation found at schedule {}", scenario, schedules);
                throw e;
            }
            prefix = next(schedule.decisions);
            if (prefix == null || schedules >= atMost) {
                Report report = new Report(scenario, schedules, preemptions, prefix == null, diverged,
                        (System.nanoTime() - began) / 1_000_000);
                LOG.info("{}", report);
                return report;
            }
        }
    }

    /** The prefix of the next schedule in depth-first order after one that made {@code decisions}; null when none is left. */
    private static List<Integer> next(List<Decision> decisions) {
        for (int d = decisions.size() - 1; d >= 0; d--) {
            Decision decision = decisions.get(d);
            int at = decision.options.indexOf(decision.chosen);
            if (at + 1 < decision.options.size()) {
                List<Integer> prefix = new ArrayList<>(d + 1);
                for (int i = 0; i < d; i++) {
                    prefix.add(decisions.get(i).chosen);
                }
                prefix.add(decision.options.get(at + 1));
                return prefix;
            }
        }
        return null;
    }

    /** One choice: which threads could go on (by index), which one did, and the call it made. */
    private record Decision(List<Integer> options, int chosen, String call) {
    }

    /**
     * The scheduler of one run. It hands the turn over through volatile fields and
     * {@link LockSupport}, never a monitor: a scenario thread that the code under test makes wait
     * must be told apart from one waiting for its turn, and a thread blocked on a monitor of the
     * scheduler would look like the former.
     */
    private final class Schedule {
        private final Run run;
        private final List<Integer> prefix;
        private final List<Worker> workers = new ArrayList<>();
        private final Map<Thread, Worker> byThread = new ConcurrentHashMap<>();
        private final List<Decision> decisions = new ArrayList<>();
        private final Thread scheduler = Thread.currentThread();
        private volatile boolean aborted;
        boolean diverged;
        /** What closing the run threw, or null. */
        Exception closeFailure;

        Schedule(Run run, List<Integer> prefix) {
            this.run = run;
            this.prefix = prefix;
        }

        final class Worker {
            final int index;
            final Step step;
            final Thread thread;
            /** The call it waits to make (START before its step); null while it runs. */
            volatile String at;
            /** Set by the scheduler to let it make that call; cleared by the worker as it goes. */
            volatile boolean granted;
            volatile boolean done;
            /** Read after the thread ended (join). */
            Throwable failure;

            Worker(int index, Step step) {
                this.index = index;
                this.step = step;
                this.thread = new Thread(this::work, step.name());
                this.thread.setDaemon(true);
            }

            private void work() {
                try {
                    park(this, START);
                    step.body().run();
                } catch (Throwable t) { // the scenario's check judges it
                    failure = t;
                } finally {
                    done = true;
                    LockSupport.unpark(scheduler);
                }
            }

            @Override
            public String toString() {
                return step.name();
            }
        }

        /** Runs the scenario in the order the prefix says (and the first option after it), then its check; what failed, or null. */
        Throwable runAndCheck() {
            Interposer interposer = run.interposer();
            interposer.around((function, args, real) -> {
                Worker w = byThread.get(Thread.currentThread());
                if (w != null && (function.startsWith("cu") || switchPoints.contains(function))) {
                    park(w, function);
                }
                return real.call();
            });
            interposer.interceptSwitchPoints();
            try {
                List<Step> steps = run.steps();
                for (int i = 0; i < steps.size(); i++) {
                    Worker w = new Worker(i, steps.get(i));
                    workers.add(w);
                    byThread.put(w.thread, w);
                }
                for (Worker w : workers) {
                    w.thread.start();
                }
                Throwable stuck = schedule();
                if (stuck != null) {
                    return stuck; // its threads stay blocked (daemons): joining them would only time out
                }
                joinAll();
                List<Throwable> failures = new ArrayList<>();
                for (Worker w : workers) {
                    failures.add(w.failure);
                }
                run.check(failures);
                return null;
            } catch (Throwable t) { // reported as this schedule's violation
                return t;
            } finally {
                Interposer.releaseSwitchPoints();
                interposer.around(Interposer.PASS);
                closeRun();
            }
        }

        /** Closes the run; a failure to do so fails the exploration (after a violation, it is added to it). */
        private void closeRun() {
            try {
                run.close();
            } catch (Exception e) {
                closeFailure = e;
            }
        }

        /** Waits (on the worker's thread) for the turn to make {@code function}. */
        private void park(Worker w, String function) {
            if (aborted) {
                return;
            }
            w.at = function;
            LockSupport.unpark(scheduler);
            long deadline = System.nanoTime() + Interposer.GUARD.toNanos();
            while (!w.granted && !aborted) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError(w + " was never scheduled past " + function);
                }
                LockSupport.parkNanos(this, 1_000_000);
            }
            w.at = null;
            w.granted = false;
        }

        /** Lets one thread go at a time until every step ended; a description of what went wrong, or null. */
        private Throwable schedule() {
            Worker current = null;
            int preempted = 0;
            while (true) {
                List<Worker> ready = awaitSettled();
                if (ready == null) {
                    return null; // every step ended
                }
                if (ready.isEmpty()) {
                    abort();
                    return new AssertionError("deadlock: no step can go on; " + states());
                }
                boolean currentReady = ready.contains(current);
                List<Worker> options = new ArrayList<>();
                if (currentReady) {
                    options.add(current);
                }
                if (!currentReady || preempted < preemptions) {
                    for (Worker w : ready) {
                        if (w != current) {
                            options.add(w);
                        }
                    }
                }
                Worker chosen = options.get(0);
                int depth = decisions.size();
                if (depth < prefix.size()) {
                    Worker named = workers.get(prefix.get(depth));
                    if (options.contains(named)) {
                        chosen = named;
                    } else {
                        diverged = true;
                    }
                }
                decisions.add(new Decision(options.stream().map(w -> w.index).toList(), chosen.index,
                        chosen + ":" + chosen.at + waiting()));
                chosen.granted = true;
                LockSupport.unpark(chosen.thread);
                if (currentReady && chosen != current) {
                    preempted++;
                }
                current = chosen;
            }
        }

        /**
         * Waits until no scenario thread runs: each waits for its turn at a driver call, has ended,
         * or waits on something else (a lock the code under test holds on a held thread's behalf,
         * a back-off). Returns the threads waiting for their turn, or null when every step ended.
         */
        private List<Worker> awaitSettled() {
            long deadline = System.nanoTime() + Interposer.GUARD.toNanos();
            int settledRounds = 0;
            int stuckRounds = 0;
            while (true) {
                List<Worker> ready = new ArrayList<>();
                boolean running = false;
                boolean others = false;
                for (Worker w : workers) {
                    if (w.done) {
                        continue;
                    }
                    if (w.at != null) {
                        if (w.granted) {
                            running = true; // granted its call, not awake yet
                        } else {
                            ready.add(w);
                        }
                    } else {
                        others = true;
                        if (!ThreadWaits.looksWaiting(w.thread)) {
                            running = true;
                        }
                    }
                }
                if (!running && !others) {
                    return ready.isEmpty() ? null : ready;
                }
                if (running) {
                    settledRounds = 0;
                    stuckRounds = 0;
                    LockSupport.parkNanos(this, 200_000); // a park or an end unparks this at once
                } else if (!ready.isEmpty()) {
                    stuckRounds = 0;
                    // A thread seen waiting may be about to go on: believe it only over a few samples.
                    if (++settledRounds >= WAIT_SAMPLES) {
                        return ready;
                    }
                    pause();
                } else if (++stuckRounds >= 4_000) {
                    return ready; // nobody could go on for about a second: a deadlock
                } else {
                    pause();
                }
                if (System.nanoTime() > deadline) {
                    abort();
                    throw new AssertionError("a step neither reached a driver call, nor ended, nor waited within "
                            + Interposer.GUARD + ": " + states());
                }
            }
        }

        /** The threads judged to wait on something else at this decision, and where: for the failure report. */
        private String waiting() {
            StringBuilder out = new StringBuilder();
            for (Worker w : workers) {
                if (!w.done && w.at == null) {
                    out.append(out.isEmpty() ? " [" : "; ").append(w).append(" waits in ").append(whereWaiting(w.thread));
                }
            }
            return out.isEmpty() ? "" : out.append(']').toString();
        }

        /** The innermost frame of {@code t} outside the JDK and this class: the code that made it wait. */
        private static String whereWaiting(Thread t) {
            for (StackTraceElement e : t.getStackTrace()) {
                String c = e.getClassName();
                if (!c.startsWith("java.") && !c.startsWith("jdk.") && !c.startsWith("sun.")) {
                    return e.getClassName().substring(c.lastIndexOf('.') + 1) + "." + e.getMethodName() + ":"
                            + e.getLineNumber();
                }
            }
            return t.getState().toString();
        }

        private void abort() {
            aborted = true;
            for (Worker w : workers) {
                LockSupport.unpark(w.thread);
            }
        }

        private void joinAll() throws InterruptedException {
            for (Worker w : workers) {
                w.thread.join(Interposer.GUARD.toMillis());
                if (w.thread.isAlive()) {
                    AssertionError e = new AssertionError(w + " did not end within " + Interposer.GUARD + " after the "
                            + "schedule let it go; " + states());
                    e.setStackTrace(w.thread.getStackTrace());
                    throw e;
                }
            }
        }

        private String states() {
            return workers.stream().map(w -> w + (w.done ? " ended" : w.at != null ? " at " + w.at : " in "
                    + w.thread.getState() + " at " + Arrays.stream(w.thread.getStackTrace()).limit(6)
                            .map(StackTraceElement::toString).collect(Collectors.joining(" < "))))
                    .collect(Collectors.joining("; "));
        }

        String describe() {
            return decisions.stream().map(Decision::call).collect(Collectors.joining(", "));
        }

        /** The choices made, as {@link #startAt} takes them. */
        List<Integer> choices() {
            return decisions.stream().map(Decision::chosen).toList();
        }

        /** About a quarter of a millisecond: between samples of a waiting thread's state. */
        private static void pause() {
            long until = System.nanoTime() + 250_000;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
        }
    }
}
