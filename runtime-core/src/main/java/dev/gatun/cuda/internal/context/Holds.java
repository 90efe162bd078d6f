package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The owners one holder keeps alive ({@link NativeResource#hold()}): what a capture's work used,
 * and then its graph and every executable made from it. Each owner is held once per holder,
 * however often it is added, so repeated in-place updates of an executable do not pile up
 * holds. An executable's holds also tell each owner its launches touch without naming it
 * ({@link TouchedByLaunches}) that it holds it, and when it lets go. Thread-safe.
 */
public final class Holds {

    private final Set<NativeResource> held = Collections.newSetFromMap(new IdentityHashMap<>());
    /** The executable whose holds these are, or null for a capture's or a graph's (which are never launched). */
    private final NativeResource executable;
    private boolean released;

    /** The holds of a capture or of a graph. */
    public Holds() {
        this(null);
    }

    /** The holds of {@code executable} (a graph executable's resource), whose launches touch what it holds. */
    public Holds(NativeResource executable) {
        this.executable = executable;
    }

    /**
     * Holds {@code resource} unless this holder already does.
     *
     * @throws IllegalStateException when the holder has released everything already, or the
     *     owner is closed and nothing holds it any more
     */
    public synchronized void add(NativeResource resource) {
        if (released) {
            throw new IllegalStateException("the holder of " + resource.identity() + " was already released");
        }
        if (!held.contains(resource)) {
            resource.hold();
            held.add(resource);
            if (executable != null && resource instanceof TouchedByLaunches touched) {
                touched.heldBy(executable);
            }
        }
    }

    /**
     * Holds {@code resource} unless this holder already does, or has released everything already
     * (then returns false and holds nothing).
     *
     * @throws IllegalStateException when the owner is closed and nothing holds it any more
     */
    public synchronized boolean addUnlessReleased(NativeResource resource) {
        if (released) {
            return false;
        }
        add(resource);
        return true;
    }

    /** Holds each of {@code resources} (see {@link #add}). */
    public void addAll(Collection<? extends NativeResource> resources) {
        for (NativeResource r : resources) {
            add(r);
        }
    }

    /** Holds everything {@code other} holds now. */
    public void addAll(Holds other) {
        addAll(other.snapshot());
    }

    /** {@return the owners held now} */
    public synchronized List<NativeResource> snapshot() {
        return new ArrayList<>(held);
    }

    /**
     * Drops the hold on {@code resource}, if this holder has one and has not released everything;
     * a dropped last hold lets a deferred close proceed to retirement. Call it outside locks that
     * retirement takes (a stream's lock).
     */
    public void remove(NativeResource resource) {
        boolean had;
        synchronized (this) {
            had = !released && held.remove(resource);
        }
        if (had) {
            unhold(resource);
        }
    }

    /**
     * Drops every hold, once; later calls do nothing. Each dropped last hold lets a deferred
     * close proceed to retirement.
     */
    public void releaseAll() {
        List<NativeResource> all;
        synchronized (this) {
            if (released) {
                return;
            }
            released = true;
            all = new ArrayList<>(held);
            held.clear();
        }
        for (NativeResource r : all) {
            unhold(r);
        }
    }

    /** Drops this holder's hold on {@code resource}, telling it first when an executable let go of it. */
    private void unhold(NativeResource resource) {
        if (executable != null && resource instanceof TouchedByLaunches touched) {
            touched.releasedBy(executable);
        }
        resource.unhold();
    }
}
