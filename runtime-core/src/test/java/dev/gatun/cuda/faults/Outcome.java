package dev.gatun.cuda.faults;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.GatunException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * What a failed driver call must lead to: a typed exception (which type, and which CUresult it
 * reports), or a documented recovery with no exception; whether the context ends poisoned; what
 * the recovery looks like from outside (counters, a later successful retry); and which driver
 * objects the simulated driver keeps that Gatun never saw (a call that did its work, then
 * reported a failure: Gatun was told there is nothing to free).
 *
 * @param thrown the exact type thrown, or null for a recovery without an exception
 * @param result the CUresult a thrown CudaException reports, or {@link #INJECTED} for the injected one
 * @param poisons whether the context ends poisoned (a sticky error)
 * @param recovery what the documentation promises, in words, for the table and failure messages
 * @param check the recovery's (or the exception's) observable effects, with the thrown exception or null
 * @param orphans driver objects left behind that Gatun cannot know of, one entry each
 * @param flagged what the simulated GPU reports as unsafe frees because of an orphan it counts
 *     as live (the start of each report)
 */
record Outcome(Class<? extends Throwable> thrown, int result, boolean poisons, String recovery,
        BiConsumer<FaultWorld, Throwable> check, List<FaultWorld.Native> orphans, List<String> flagged) {

    /** {@link #result}: the CUresult the fault injected. */
    static final int INJECTED = Integer.MIN_VALUE;

    /** The call succeeds (the run with no fault). */
    static final Outcome SUCCEEDS = new Outcome(null, INJECTED, false, "succeeds", (w, e) -> { }, List.of(), List.of());

    /** A typed exception reporting the injected CUresult; the context stays usable. */
    static Outcome fails(Class<? extends GatunException> type) {
        return new Outcome(type, INJECTED, false, "throws " + type.getSimpleName(), (w, e) -> { }, List.of(), List.of());
    }

    /** A sticky error: a CudaException reporting it, and the context poisoned. */
    static Outcome poisoned() {
        return new Outcome(CudaException.class, INJECTED, true, "throws CudaException and poisons the context",
                (w, e) -> { }, List.of(), List.of());
    }

    /** No exception: the documented recovery {@code how}, whose effects {@code check} asserts. */
    static Outcome recovers(String how, BiConsumer<FaultWorld, Throwable> check) {
        return new Outcome(null, INJECTED, false, how, check, List.of(), List.of());
    }

    /** The exception reports {@code original}, not the injected result (the fault hit a call made while reporting another error). */
    Outcome reporting(int original) {
        return new Outcome(thrown, original, poisons, recovery, check, orphans, flagged);
    }

    /** Also asserts {@code more}, described by {@code what}. */
    Outcome and(String what, BiConsumer<FaultWorld, Throwable> more) {
        return new Outcome(thrown, result, poisons, recovery + "; " + what, check.andThen(more), orphans, flagged);
    }

    /** The simulated driver keeps one object of {@code kind} that the call made before reporting a failure. */
    Outcome orphaning(FaultWorld.Native kind) {
        List<FaultWorld.Native> more = new ArrayList<>(orphans);
        more.add(kind);
        return new Outcome(thrown, result, poisons, recovery + "; the driver keeps the " + kind + " it made",
                check, List.copyOf(more), flagged);
    }

    /**
     * The simulated GPU counts the orphan as live and so reports these frees as unsafe (each
     * string starts a report); no one can use the orphan, so they are not.
     */
    Outcome flagging(String... reports) {
        return new Outcome(thrown, result, poisons, recovery, check, orphans, List.of(reports));
    }

    @Override
    public String toString() {
        return recovery;
    }
}
