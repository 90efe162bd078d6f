package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.TestHooks;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the jcstress tests share: one context of the simulated driver, made once per JVM, two of
 * its streams (never used on the driver: a use only lists them), and a resource that records how
 * its close freed it instead of calling the driver.
 */
final class Probes {

    static final ContextState CONTEXT = TestHooks.state(new Simulated().context());
    /** Where {@link Probe}s are made, in stream order, as a stream-ordered allocation is. */
    static final StreamState ORIGIN = new StreamState(CONTEXT, MemorySegment.ofAddress(0x5_0001));
    /** Another stream, which a racing use lists. */
    static final StreamState OTHER = new StreamState(CONTEXT, MemorySegment.ofAddress(0x5_0002));

    private Probes() {
    }

    /**
     * A resource made in {@link #ORIGIN}'s order, as a stream-ordered allocation: its close frees
     * it at once when {@code ORIGIN} is the only stream listed (the sole stream it is given), and
     * after the fences of all of them otherwise; it records which, and counts its frees.
     */
    static final class Probe extends NativeResource {
        final AtomicInteger frees = new AtomicInteger();
        /** Set by the close: 1 when it freed at once on the origin alone, 2 when it saw several streams. */
        volatile int freedAs;

        Probe() {
            super(CONTEXT, OwnerKind.EVENT, ORIGIN);
        }

        @Override
        protected boolean freeAtClose(StreamState soleStream, boolean countClose) {
            freedAs = soleStream == ORIGIN ? 1 : 2; // no driver call: what matters is what the close saw
            frees.incrementAndGet();
            return true;
        }

        @Override
        protected Retirement.Release howToFree() {
            return () -> {
                frees.incrementAndGet();
                return 0;
            };
        }

        @Override
        protected boolean synchronizingFree() {
            return false;
        }

        @Override
        public String identity() {
            return "probe#" + id();
        }
    }
}
