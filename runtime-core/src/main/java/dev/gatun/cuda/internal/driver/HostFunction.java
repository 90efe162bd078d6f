package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUhostFn;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The one host function Gatun hands {@code cuLaunchHostFunc}: an FFM upcall stub made once per
 * class loader, whose body runs on the driver's own callback thread. That thread must never run
 * user code, call CUDA (the driver forbids it, and it would deadlock), or see an exception (an
 * exception escaping an upcall ends the JVM). So the body only appends its token to a lock-free
 * queue and unparks the one thread that {@linkplain #consumeOn registered} to consume it; all else
 * happens on that thread.
 */
public final class HostFunction {

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

    /** The upcall's body, on the driver's thread: records the token, wakes the consumer, never throws. */
    private static void fired(MemorySegment userData) {
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
