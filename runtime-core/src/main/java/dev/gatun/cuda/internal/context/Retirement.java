package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import java.util.List;

/**
 * One native handle on its way out: what it is (for logs), the evidence that must complete
 * before it is freed, and how to free it.
 *
 * @param identity names the owner in logs through its {@code toString()}, e.g. {@code DeviceBuffer#12 (4096 bytes)}:
 *     the resource itself, so that the string is built only when a line is logged
 * @param kind the owner kind (for counters)
 * @param evidence one item per stream that used the resource
 * @param release frees the handle; returns a CUresult
 * @param synchronizing whether the free synchronizes the device (so it must not run while a
 *     global-mode capture is active: it is deferred instead)
 */
public record Retirement(Object identity, OwnerKind kind, List<Evidence> evidence, Release release,
        boolean synchronizing) {

    public Retirement {
        evidence = List.copyOf(evidence);
    }

    /**
     * Frees a native handle. Runs on any thread, with any context current or none: each driver
     * call of a free makes its context current itself.
     */
    @FunctionalInterface
    public interface Release {
        int free();

        /**
         * Whether {@link #free()} calls the driver. One that does not (it only drops references
         * Java holds) still runs on a context poisoned by a sticky error, where driver frees are
         * abandoned: what it releases must not stay live because the GPU failed.
         */
        default boolean callsDriver() {
            return true;
        }

        /**
         * Called once, instead of a successful {@link #free()}, when the queue stops trying to
         * free the handle (its free failed on every attempt, or a sticky error poisoned the
         * context): the handle stays allocated, but no work can use it any more, so what the
         * owner keeps alive only for that work can go. Does nothing by default.
         */
        default void abandoned() {
        }

        /** A release that drops Java-side references only and makes no driver call. */
        static Release withoutDriver(Runnable drop) {
            return new Release() {
                @Override
                public int free() {
                    drop.run();
                    return 0;
                }

                @Override
                public boolean callsDriver() {
                    return false;
                }
            };
        }
    }
}
