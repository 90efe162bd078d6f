package dev.gatun.cuda.internal.context;

/**
 * The steps of the stream protocol that read or write state other threads share without a
 * driver call between them: the list of streams an owner was used on, its closed flag and owner
 * epoch, its holds and deferred retirement, a stream's ledger and "unordered" flag, the fence
 * taken before a capture, the capture gate's and census's lock-free reads, the recyclers. Each
 * step calls {@link #reach()} just before its access, so that a test's scheduler
 * ({@code testing/ScheduleExplorer}, {@code testing/Interposer.stopAt}) can switch threads there
 * and explore the orders of two stretches of Java code that no driver call separates.
 *
 * <p><b>Free in production.</b> {@link #ENABLED} is a {@code static final} read once from the
 * system property {@code gatun.test.switchPoints} (unset, or anything but {@code true}: off).
 * Off, {@link #reach()} is a constant-false branch that the JIT folds away once it is inlined:
 * no field read, no call, no allocation on any path. The runtime-core and runtime-graph test
 * JVMs turn it on (their surefire configuration); a listener then runs only while a test has
 * installed one ({@link #listen}). Nothing else in Gatun reads the property.
 */
public enum SwitchPoint {

    /** An owner's use lists its stream ({@link StreamUsage#add}). */
    USAGE_ADD,
    /** A close or retirement reads the streams an owner was used on (sole, any, all). */
    USAGE_READ,
    /** A recycled resource forgets the uses of its last life ({@link StreamUsage#reset}). */
    USAGE_RESET,
    /** A use or a hold reads whether the owner is closed for good (closed, and no deferred retirement). */
    CLOSED_READ,
    /** A close marks the owner closed ({@link NativeResource#close}, {@code closeUnlessHeld}). */
    CLOSED_WRITE,
    /** A use reads which handle stands for a recycled memory object (its owner epoch). */
    OWNER_READ,
    /** A close clears the handle that stands for a memory object. */
    OWNER_CLEAR,
    /** {@link NativeResource#hold()} counts a hold. */
    HOLD_COUNT,
    /** {@link NativeResource#unhold()} drops a hold. */
    UNHOLD_COUNT,
    /** A close reads the holds (before deferring, and again after). */
    HOLDS_READ,
    /** A close sets (or withdraws) its deferred retirement. */
    DEFERRAL_WRITE,
    /** The last unhold reads whether a close deferred its retirement to it. */
    DEFERRAL_READ,
    /** A stream's ledger is read or counted ({@link StreamLedger}). */
    LEDGER,
    /** A submission flags its stream "unordered" ({@link StreamState#submitted()}). */
    UNORDERED_SET,
    /** A synchronous operation takes a stream's "unordered" flag. */
    UNORDERED_TAKE,
    /** A capture's begin reads whether work is pending on its stream, before it takes the fence. */
    FENCE_BEFORE_CAPTURE_READ,
    /** A capture's begin keeps the fence it recorded for synchronous operations to wait on. */
    FENCE_BEFORE_CAPTURE_WRITE,
    /** The capture gate's or census's lock-free read (is a capture possible, or held by this thread). */
    CAPTURE_FAST_READ,
    /** A synchronizing section counts itself into the capture gate, or out of it, without the gate's lock. */
    GATE_SECTION_COUNT,
    /** A global capture counts itself into the capture gate (or withdraws, or leaves), under the gate's lock. */
    GATE_CAPTURE_COUNT,
    /** A global capture reads how many synchronizing sections are inside the gate. */
    GATE_SECTIONS_READ,
    /** A capture announces that it waits for the sections to drain, or the last section out reads whether one waits. */
    GATE_DRAIN,
    /** A memory pool takes back counts a stream's ledger kept for it, or a pool's snapshot reads whether one did. */
    POOL_FOLD,
    /** A freed memory object is given back to its recycler, or taken from it. */
    RECYCLE;

    /** Whether switch points are live in this JVM: {@code -Dgatun.test.switchPoints=true}, tests only. */
    public static final boolean ENABLED = Boolean.getBoolean("gatun.test.switchPoints");

    private static volatile Listener listener;

    /** What a test runs at each switch point a thread reaches. */
    @FunctionalInterface
    public interface Listener {
        /** Called on the thread that reached {@code point}, just before its access. */
        void reached(SwitchPoint point);
    }

    /**
     * Marks the step just before its shared access. Off ({@link #ENABLED} false), this does
     * nothing and costs nothing once compiled.
     */
    public void reach() {
        if (ENABLED) {
            Listener l = listener;
            if (l != null) {
                l.reached(this);
            }
        }
    }

    /**
     * Runs {@code l} at every switch point from now on (null: none). For tests.
     *
     * @throws IllegalStateException when switch points are off in this JVM (a test that needs
     *     them must say so, not pass without them)
     */
    public static void listen(Listener l) {
        if (!ENABLED && l != null) {
            throw new IllegalStateException("switch points are off in this JVM; run it with "
                    + "-Dgatun.test.switchPoints=true (runtime-core's surefire configuration does)");
        }
        listener = l;
    }
}
