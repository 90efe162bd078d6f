package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.internal.driver.HostFunction;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Completion of GPU work as {@link CompletableFuture}s, for every context of the process: each
 * pending future has a token; {@code cuLaunchHostFunc} queues {@link HostFunction}'s stub with it
 * behind the work; the stub records the token on the driver's thread and wakes the one
 * dispatcher thread ({@value #THREAD_NAME}, a daemon started on first use), which hands each
 * future to its executor. No thread per stream or per future, and no user code on the driver's
 * thread or (unless the user's executor runs tasks inline) on the dispatcher.
 *
 * <p>The driver does not call host functions once a sticky error hit the context, so the
 * dispatcher also watches the contexts with pending futures: every {@value #PROBE_MILLIS} ms
 * while any are pending it polls each one's synchronous stream ({@code cuStreamQuery}, which reports a
 * sticky error and so poisons the context through layer 2), and fails the pending futures of a
 * poisoned context with its {@link ContextPoisonedException}. {@link #contextClosed} settles
 * the rest when a context closes.
 */
public final class Completions {

    private static final Logger LOG = LoggerFactory.getLogger(Completions.class);
    static final String THREAD_NAME = "gatun-completions";
    static final long PROBE_MILLIS = 100;
    /** Names the operation in the poison of a future that a sticky error failed. */
    private static final String OPERATION = "onComplete";

    private static final Map<Long, CompletionFuture> PENDING = new ConcurrentHashMap<>();
    /** Pending futures per context: which contexts to probe, and how many each waits for. */
    private static final Map<ContextState, AtomicLong> PER_CONTEXT = new ConcurrentHashMap<>();
    private static final AtomicLong TOKENS = new AtomicLong();
    private static final Object START = new Object();
    private static volatile Thread dispatcher;
    /** The dispatcher parks without a deadline: no future is pending, so there is nothing to watch. */
    private static volatile boolean idle;

    private Completions() {
    }

    /**
     * A new future, completed once the work queued on {@code stream} so far has completed.
     *
     * @param stream an open stream that is not capturing (the caller checked it, under its capture lock)
     * @param executor where the future is completed, and so where its non-async dependents run
     * @param operation names the call in the exception of a poisoned context, e.g. "Stream.onComplete"
     */
    public static CompletableFuture<Void> after(StreamState stream, Executor executor, String operation) {
        ContextState context = stream.context();
        context.calls().live(operation);
        startDispatcher();
        CompletionFuture f = new CompletionFuture(TOKENS.incrementAndGet(), context, executor);
        // Registered before the launch: the host function may fire before the launch returns.
        PER_CONTEXT.computeIfAbsent(context, _ -> new AtomicLong()).incrementAndGet();
        PENDING.put(f.token, f);
        if (idle) {
            LockSupport.unpark(dispatcher); // from now on it watches this context for a sticky error
        }
        try {
            context.calls().completions().launchHostFunction(stream.handle(), f.token);
        } catch (RuntimeException e) {
            detach(f); // a host function queued despite the failure finds no token and is ignored
            throw e;
        }
        return f;
    }

    /** Forgets {@code f}'s token (completed, cancelled or failed); true for the one call that did. */
    static boolean detach(CompletionFuture f) {
        if (!PENDING.remove(f.token, f)) {
            return false;
        }
        AtomicLong n = PER_CONTEXT.get(f.context);
        if (n != null) {
            n.decrementAndGet();
        }
        return true;
    }

    /** Futures waiting for a host function, in every context (for tests and counters). */
    public static long pending() {
        return PENDING.size();
    }

    /** The futures of {@code context} still waiting for a host function. */
    public static long pending(ContextState context) {
        AtomicLong n = PER_CONTEXT.get(context);
        return n == null ? 0 : n.get();
    }

    /**
     * A context has closed (after its drain, when it was healthy, had run every host function
     * queued in it): completes the futures whose host function fired, then fails those still
     * pending, with the context's poison or an {@link IllegalStateException}.
     */
    public static void contextClosed(ContextState context) {
        dispatchFired();
        if (PER_CONTEXT.containsKey(context)) {
            fail(context, context.poisoned()
                    ? context.calls().checked().poisonedFailure(OPERATION)
                    : new IllegalStateException("the context of device " + context.device() + " was closed before "
                            + "the host function behind this future ran; the GPU work it waited for may not have run"));
            PER_CONTEXT.remove(context);
        }
    }

    private static void startDispatcher() {
        if (dispatcher != null) {
            return;
        }
        synchronized (START) {
            if (dispatcher == null) {
                Thread t = Thread.ofPlatform().daemon().name(THREAD_NAME).unstarted(Completions::dispatch);
                HostFunction.consumeOn(t);
                t.start();
                dispatcher = t;
            }
        }
    }

    /** The dispatcher thread's loop: never ends, never lets an exception end it. */
    private static void dispatch() {
        long lastProbe = System.nanoTime();
        long probeNanos = TimeUnit.MILLISECONDS.toNanos(PROBE_MILLIS);
        while (true) {
            try {
                dispatchFired();
                long lost = HostFunction.takeLost();
                if (lost > 0) {
                    LOG.error("{} host functions could not record their completion (out of memory); their futures "
                            + "complete only when their context is poisoned or closed", lost);
                }
                if (PENDING.isEmpty()) {
                    idle = true; // set before the check: a registration after it sees idle and unparks
                    if (PENDING.isEmpty()) {
                        LockSupport.park(Completions.class);
                    }
                    idle = false;
                    continue;
                }
                if (System.nanoTime() - lastProbe >= probeNanos) {
                    probe();
                    lastProbe = System.nanoTime();
                }
                LockSupport.parkNanos(Completions.class, probeNanos);
            } catch (Throwable e) {
                LOG.error("The completion dispatcher caught an unexpected error and goes on", e);
            }
        }
    }

    /** Hands every future whose host function fired to its executor. Any thread may call it. */
    private static void dispatchFired() {
        for (long token = HostFunction.take(); token != 0; token = HostFunction.take()) {
            CompletionFuture f = PENDING.get(token);
            if (f != null && detach(f)) { // else cancelled or failed meanwhile
                execute(f, f);
            }
        }
    }

    /** Polls each context with pending futures for a sticky error; fails the futures of a poisoned one. */
    private static void probe() {
        for (Map.Entry<ContextState, AtomicLong> e : PER_CONTEXT.entrySet()) {
            ContextState context = e.getKey();
            if (e.getValue().get() == 0) {
                continue;
            }
            if (!context.poisoned()) {
                context.probeStickyError();
            }
            if (context.poisoned()) {
                fail(context, context.calls().checked().poisonedFailure(OPERATION));
            }
        }
    }

    private static void fail(ContextState context, Throwable error) {
        for (CompletionFuture f : PENDING.values()) {
            if (f.context == context && detach(f)) {
                execute(f, () -> f.fail(error));
            }
        }
    }

    private static void execute(CompletionFuture f, Runnable task) {
        try {
            f.executor.execute(task);
        } catch (RuntimeException e) { // RejectedExecutionException, or a broken executor
            LOG.warn("The executor of a completion future refused it ({}); completing it on the common pool", e.toString());
            ForkJoinPool.commonPool().execute(task);
        }
    }
}
