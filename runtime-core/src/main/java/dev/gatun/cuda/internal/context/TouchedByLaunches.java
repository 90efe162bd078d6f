package dev.gatun.cuda.internal.context;

/**
 * An owner whose bytes the launches of an executable graph may read or write without naming it:
 * pinned host memory that a copy node of the graph (captured, or added by hand) copies to or
 * from. Host access to such bytes waits for the launches of every executable that holds the
 * owner, and a transfer through them outside the graph is ordered after those launches: the
 * executables' {@link Holds} tell the owner which executables hold it, and each executable's
 * stream usage (the streams it was launched on) tells where its launches were queued.
 */
public interface TouchedByLaunches {

    /**
     * {@code executable} (a graph executable's resource) holds this owner from now on: its launches
     * may touch it. Called once per executable, under its holds' monitor.
     */
    void heldBy(NativeResource executable);

    /**
     * {@code executable} let go of this owner: it was destroyed (its launches completed) or given
     * up by retirement. Called once, after {@link #heldBy}.
     */
    void releasedBy(NativeResource executable);
}
