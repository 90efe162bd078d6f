package dev.gatun.cuda;

import java.util.Objects;

/**
 * The update-or-instantiate policy for one replayed piece of work (CUDA.jl's {@code @captured}):
 * each new graph of it is {@linkplain #install installed} by updating the current executable in
 * place ({@code cuGraphExecUpdate}, about a tenth of a millisecond), and where the driver
 * refuses, by updating the spare executable, and where that is refused too, by instantiating the
 * graph (milliseconds). At most one spare is kept: the executable an instantiation or a spare
 * swap replaced. So work that alternates between two shapes settles into updates after its first
 * two instantiations. Every path and every refusal's reason is counted ({@link #counters()}),
 * logged at DEBUG with the nodes the driver blamed, and recorded as a JFR event
 * {@code dev.gatun.GraphInstall}. The step itself is a {@link GraphInstaller}'s, which
 * {@code GraphSlot} shares.
 *
 * <p>The spare holds what its last graph held (buffers, modules) until it is replaced or this is
 * closed. A refusal for {@link GraphUpdateResult#MEMORY_NODES} keeps no spare: an executable of a
 * graph with memory nodes would keep its graph memory.
 *
 * <p>Thread-safe: installs are serialized; {@link #launch} may run on any thread meanwhile and
 * launches whichever executable is current when it reads it (see {@link GraphExec} for how a
 * launch and an update of one executable exclude each other). A launch that read an executable
 * which an install then closed (the old spare, or one refused for memory nodes) fails with an
 * {@link IllegalStateException} instead of launching it: where that matters, install and launch
 * on one thread, or use {@code GraphSlot}, whose replays and re-captures exclude each other.
 */
public final class UpdatingExecutable implements AutoCloseable {

    /** The way a graph was installed. */
    public enum Path {
        /** The current executable was updated in place. */
        UPDATED,
        /** The current executable refused; the spare was updated and became current. */
        SPARE,
        /** Both refused (or there was no spare): the graph was instantiated. */
        INSTANTIATED
    }

    /**
     * What one {@link #install} did.
     *
     * @param path how the graph was installed
     * @param refusal why the current executable refused the update, with the nodes the driver
     *     blamed; null when it was updated in place
     */
    public record Install(Path path, GraphUpdateReport refusal) {
    }

    private static final Install UPDATED = new Install(Path.UPDATED, null);

    private final CudaContext context;
    /** The policy's step and its spare, shared with GraphSlot's re-captures. */
    private final GraphInstaller installer = new GraphInstaller();
    private volatile GraphExec current;
    // Guarded by this.
    private boolean closed;

    private UpdatingExecutable(GraphExec first) {
        this.context = first.context();
        this.current = first;
    }

    /**
     * Instantiates {@code first}, the policy's first executable.
     *
     * @param first the first graph of the work
     * @return the policy, to close when the work is done
     */
    public static UpdatingExecutable instantiate(Graph first) {
        return new UpdatingExecutable(first.instantiate());
    }

    /**
     * Makes later launches run {@code next}: updates the current executable in place, or the
     * spare, or instantiates {@code next}, in that order. The caller may close {@code next}
     * afterwards (the executables hold what they need of it).
     *
     * @param next the work's new graph, of this policy's context
     * @return the path taken and, when the current executable refused, why
     * @throws IllegalStateException when this policy is closed
     * @throws CudaException when an update fails otherwise, or the instantiation fails; the
     *     current executable is then unchanged unless the failed update may have applied (see
     *     {@link GraphExec#tryUpdate})
     */
    public synchronized Install install(Graph next) {
        Objects.requireNonNull(next, "next");
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        context.checkSame(next.context(), "the graph");
        GraphInstaller.Result installed = installer.install(current, next, made -> { });
        current = installed.current();
        installed.dropped().forEach(GraphExec::close); // retired once their last launches completed
        return installed.path() == Path.UPDATED ? UPDATED : new Install(installed.path(), installed.refusal());
    }

    /**
     * Launches the current executable on {@code stream} (see {@link GraphExec#launch}).
     *
     * @param stream a stream of this policy's context
     */
    public void launch(Stream stream) {
        current.launch(stream);
    }

    /** {@return the executable launches run now} Closed by this policy: do not close it. */
    public GraphExec current() {
        return current;
    }

    /** {@return whether a spare executable is kept now} */
    public boolean hasSpare() {
        return installer.hasSpare();
    }

    /** {@return the installs by path, and the refusals by reason} */
    public GraphInstallCounters counters() {
        GraphInstallCounters installs = installer.counters();
        return new GraphInstallCounters(installs.updates(), installs.spareUpdates(), installs.instantiations() + 1,
                installs.refusals(), installs.spareRefusals()); // and the first, instantiated here
    }

    /**
     * Closes the current and the spare executable; each is destroyed once its last launch has
     * completed. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        current.close();
        GraphExec spare = installer.releaseSpare();
        if (spare != null) {
            spare.close();
        }
    }

    @Override
    public String toString() {
        return "UpdatingExecutable[" + current + "]";
    }
}
