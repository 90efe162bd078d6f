package dev.gatun.cuda.internal.driver;

/**
 * Layer 2 for one context: the driver's functions as typed calls, grouped by area. Each call
 * names its operation once, owns its out-parameters, checks its result and poisons the context
 * on a sticky error, all through one {@link Checked}; owners call only these.
 */
public final class DriverCalls {

    private final Checked checked;
    private final EventCalls events;
    private final GraphCalls graphs;

    public DriverCalls(Checked checked) {
        this.checked = checked;
        this.events = new EventCalls(checked);
        this.graphs = new GraphCalls(checked);
    }

    /** The choke point: poison state, the driver, the device. */
    public Checked checked() {
        return checked;
    }

    public EventCalls events() {
        return events;
    }

    public GraphCalls graphs() {
        return graphs;
    }
}
