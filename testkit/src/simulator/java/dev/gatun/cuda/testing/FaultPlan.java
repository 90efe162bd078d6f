package dev.gatun.cuda.testing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Which driver calls {@link FaultInjection} makes fail, and how. Thread-safe; while no
 * fault is planned and counting is off, a call costs one volatile read.
 *
 * <p>A rule names a driver function (as in {@link DriverApi}, e.g. {@code "cuEventRecord"}),
 * the result to return, whether the real call is skipped ({@link Mode#REPLACE}) or made and
 * its result replaced ({@link Mode#OVERRIDE}), how many matching calls to let through first,
 * and how many to fail (or {@link #ALWAYS}).
 */
public final class FaultPlan {

    /** Returned by {@link #before} when the call should go through to the real driver. */
    public static final int PASS = Integer.MIN_VALUE;
    /** A {@code times} value: fail every matching call from now on. */
    public static final int ALWAYS = -1;
    /** A function name that matches every driver function (a driver that fails everything, as after a sticky error). */
    public static final String ANY = "*";

    public enum Mode {
        /** Do not make the call; return the planned result. */
        REPLACE,
        /** Make the call, then return the planned result instead of its own. */
        OVERRIDE
    }

    private static final class Rule {
        final String function;
        final int result;
        final Mode mode;
        int skip;
        int remaining;

        Rule(String function, int result, Mode mode, int skip, int times) {
            this.function = function;
            this.result = result;
            this.mode = mode;
            this.skip = skip;
            this.remaining = times;
        }
    }

    private final List<Rule> rules = new ArrayList<>();
    private final Map<String, Integer> calls = new HashMap<>();
    private volatile boolean armed;
    private boolean counting;

    /** Plans a fault; see the class comment. Returns this plan for chaining. */
    public synchronized FaultPlan inject(String function, int result, Mode mode, int skip, int times) {
        if (result == PASS || result == 0) {
            throw new IllegalArgumentException("a fault must be an error result, not " + result);
        }
        if (skip < 0 || (times < 1 && times != ALWAYS)) {
            throw new IllegalArgumentException("skip must be >= 0 and times >= 1 or ALWAYS");
        }
        rules.add(new Rule(function, result, mode, skip, times));
        armed = true;
        return this;
    }

    /** The next call of {@code function} is not made and returns {@code result}. */
    public FaultPlan replaceOnce(String function, int result) {
        return inject(function, result, Mode.REPLACE, 0, 1);
    }

    /** Every later call of {@code function} is not made and returns {@code result}. */
    public FaultPlan replaceAlways(String function, int result) {
        return inject(function, result, Mode.REPLACE, 0, ALWAYS);
    }

    /** The next call of {@code function} is made, but reports {@code result}. */
    public FaultPlan overrideOnce(String function, int result) {
        return inject(function, result, Mode.OVERRIDE, 0, 1);
    }

    /** Counts calls per function from now on (see {@link #calls}), even with no fault planned. */
    public synchronized FaultPlan countCalls() {
        counting = true;
        armed = true;
        return this;
    }

    /** How many times {@code function} was called (made or replaced) while counting or armed. */
    public synchronized int calls(String function) {
        return calls.getOrDefault(function, 0);
    }

    /** Every function called while counting or armed, with how many times: the exact multiset of driver calls. */
    public synchronized Map<String, Integer> counts() {
        return Map.copyOf(calls);
    }

    /**
     * The exact multiset of driver calls {@code operation} makes: removes every rule and count,
     * counts while it runs, and removes them again (so the plan is empty after, as before).
     */
    public Map<String, Integer> callsOf(Runnable operation) {
        clear();
        countCalls();
        operation.run();
        Map<String, Integer> made = counts();
        clear();
        return made;
    }

    /** How many driver calls of any function were made (or replaced) while counting or armed. */
    public synchronized int totalCalls() {
        int total = 0;
        for (int n : calls.values()) {
            total += n;
        }
        return total;
    }

    /** Removes every rule and count. */
    public synchronized void clear() {
        rules.clear();
        calls.clear();
        counting = false;
        armed = false;
    }

    /** Called before the real call: a result to return instead, or {@link #PASS}. */
    int before(String function) {
        if (!armed) {
            return PASS;
        }
        synchronized (this) {
            calls.merge(function, 1, Integer::sum);
            Rule rule = match(function, Mode.REPLACE);
            return rule == null ? PASS : rule.result;
        }
    }

    /** Called with the real call's result: the result to report. */
    int after(String function, int real) {
        if (!armed) {
            return real;
        }
        synchronized (this) {
            Rule rule = match(function, Mode.OVERRIDE);
            return rule == null ? real : rule.result;
        }
    }

    private Rule match(String function, Mode mode) {
        for (Iterator<Rule> it = rules.iterator(); it.hasNext();) {
            Rule rule = it.next();
            if (rule.mode != mode || !rule.function.equals(function) && !rule.function.equals(ANY)) {
                continue;
            }
            if (rule.skip > 0) {
                rule.skip--;
                continue;
            }
            if (rule.remaining != ALWAYS && --rule.remaining == 0) {
                it.remove();
            }
            armed = counting || !rules.isEmpty();
            return rule;
        }
        return null;
    }
}
