package dev.gatun.cuda.internal.events;

import java.util.function.Supplier;
import jdk.jfr.Event;

/** The one "start if enabled" idiom of every event here. */
final class Probes {

    private Probes() {
    }

    /**
     * A new, begun event when {@code probe}'s type is enabled in a running recording; else null,
     * with nothing allocated ({@code factory} is a constructor reference, a constant).
     */
    static <E extends Event> E begun(E probe, Supplier<E> factory) {
        if (!probe.isEnabled()) {
            return null;
        }
        E event = factory.get();
        event.begin();
        return event;
    }
}
