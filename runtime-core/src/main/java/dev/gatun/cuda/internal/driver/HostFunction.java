package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.bindings.driver.CUhostFn;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The one host function Gatun hands the driver ({@code cuLaunchHostFunc}, and the host nodes of
 * graphs): an FFM upcall stub made once per class loader, whose body runs on the driver's own
 * callback thread. That thread must never call CUDA (the driver forbids it, and a synchronizing
 * call would deadlock) or see an exception (an exception escaping an upcall ends the JVM).
 *
 * <p>Its {@code userData} is a token, never an address. A positive token is a completion: the
 * body only appends it to a lock-free queue and unparks the one thread that
 * {@linkplain #consumeOn registered} to consume it, so no user code runs on the driver's thread.
 * A negative token names a {@linkplain #register registered} {@link Callback}, which the body
 * runs right there, since a host node's dependents must wait for it: while it runs, the thread is
 * marked, and every Gatun driver call made on it is refused before the call
 * ({@link #refuseInsideCallback}).
 */
public final class HostFunction {

    /**
     * A host callback's body: runs on the driver's thread, must not throw (the registrant reports
     * what the user's code threw) and must make no driver call (refused while it runs).
     */
    public interface Callback {
        /** Runs the callback once. */
        void fire();
    }

    private static final Map<Long, Callback> CALLBACKS = new ConcurrentHashMap<>();
    private static final AtomicLong CALLBACK_TOKENS = new AtomicLong();
    /**
     * How many callbacks run now, on any thread. The hot paths read only this ({@link Checked#live}):
     * one volatile read, a plain load on x86, and nothing else while it is 0; the thread-local mark
     * is read only when a callback runs somewhere.
     */
    private static volatile int running;
    private static final VarHandle RUNNING;
    /** Set on the driver's thread while it runs a callback. */
    private static final ThreadLocal<Boolean> INSIDE = new ThreadLocal<>();

    static {
        try {
            RUNNING = MethodHandles.lookup().findStaticVarHandle(HostFunction.class, "running", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e); // the field above exists: cannot happen
        }
    }

    private static final ConcurrentLinkedQueue<Long> FIRED = new ConcurrentLinkedQueue<>();
    /** Upcalls whose token could not be recorded (only an out-of-memory error can do that); read by the consumer. */
    private static final LongAdder LOST = new LongAdder();
    private static volatile Thread consumer;
    /** Made on first use: loading this class costs nothing until a completion is asked for. */
    private static final class Stub {
        static final MemorySegment STUB = CUhostFn.allocate(HostFunction::fired, Arena.global());
    }

    private HostFunction() {
    }

    /** The upcall stub: a {@code CUhostFn}, valid for the life of the process. */
    static MemorySegment stub() {
        return Stub.STUB;
    }

    /**
     * The upcall's body, on the driver's thread: runs a callback (its token is negative), or
     * records a completion's token and wakes the consumer; never throws.
     */
    private static void fired(MemorySegment userData) {
        long token = userData.address();
        if (token < 0) {
            runCallback(token);
            return;
        }
        try {
            FIRED.offer(userData.address());
            Thread t = consumer;
            if (t != null) {
                LockSupport.unpark(t);
            }
        } catch (Throwable e) {
            LOST.increment(); // nothing else is safe here; the consumer reports it
        }
    }

    private static void runCallback(long token) {
        Callback callback = CALLBACKS.get(token);
        if (callback == null) {
            LOST.increment(); // unregistered while a graph could still run it: a Gatun bug, reported by the consumer
            return;
        }
        // Counted before the mark, so the mark is seen by every check made on this thread while it is set.
        RUNNING.getAndAdd(1);
        INSIDE.set(Boolean.TRUE);
        try {
            callback.fire();
        } catch (Throwable e) {
            LOST.increment(); // fire() reports the user's exceptions itself; nothing else is safe here
        } finally {
            INSIDE.remove();
            RUNNING.getAndAdd(-1);
        }
    }

    /**
     * Registers {@code callback}; {@return its token, a negative number} to pass as the host
     * function's {@code userData}. It stays registered until {@link #unregister}, which its owner
     * calls once no graph or stream can run it any more.
     */
    public static long register(Callback callback) {
        long token = -CALLBACK_TOKENS.incrementAndGet();
        CALLBACKS.put(token, callback);
        return token;
    }

    /** Forgets a callback's token. */
    public static void unregister(long token) {
        CALLBACKS.remove(token);
    }

    /** How many callbacks are registered (for tests: none is left once its graphs are gone). */
    public static int registered() {
        return CALLBACKS.size();
    }

    /**
     * Refuses a driver call made inside a host callback, before it is made: CUDA forbids CUDA
     * calls in host functions (a call that synchronizes would wait for the host function that
     * waits for it). Costs one volatile read while no callback runs anywhere.
     *
     * @throws CudaException {@code CUDA_ERROR_NOT_PERMITTED}, naming the operation, when the
     *     calling thread runs a host callback
     */
    static void refuseInsideCallback(String operation, int device) {
        if (insideCallback()) {
            int notPermitted = CudaDriver.CUDA_ERROR_NOT_PERMITTED();
            throw new CudaException(notPermitted, CuResults.name(notPermitted), "Gatun refuses every driver call made "
                    + "inside a host callback (a host node, or Stream.launchHostFunction): CUDA forbids CUDA calls in "
                    + "host functions, and one that waits for the GPU would wait for the callback that waits for it. "
                    + "Do host-side work only in the callback; queue GPU work from another thread, after the graph "
                    + "launch or stream work it depends on (e.g. with onComplete)", operation, device);
        }
    }

    /** Whether the calling thread runs a host callback now; one volatile read while none runs anywhere. */
    static boolean insideCallback() {
        return running != 0 && INSIDE.get() != null;
    }

    /** Makes {@code thread} the one {@link #fired} unparks. */
    public static void consumeOn(Thread thread) {
        consumer = thread;
    }

    /** The next token recorded by the host function, or 0 when none is waiting. Any thread may take. */
    public static long take() {
        Long token = FIRED.poll();
        return token == null ? 0 : token;
    }

    /** How many upcalls could not record their token since the last call, for the consumer to report. */
    public static long takeLost() {
        return LOST.sumThenReset();
    }
}
