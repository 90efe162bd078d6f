package dev.gatun.cuda;

import dev.gatun.cuda.internal.events.GraphInstallEvent;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The update-or-instantiate policy for one replayed piece of work (CUDA.jl's {@code @captured}):
 * each new graph of it is {@linkplain #install installed} by updating the current executable in
 * place ({@code cuGraphExecUpdate}, about a tenth of a millisecond), and where the driver
 * refuses, by updating the spare executable, and where that is refused too, by instantiating the
 * graph (milliseconds). At most one spare is kept: the executable an instantiation or a spare
 * swap replaced. So work that alternates between two shapes settles into updates after its first
 * two instantiations. Every path and every refusal's reason is counted ({@link #counts()}),
 * logged at DEBUG with the nodes the driver blamed, and recorded as a JFR event
 * {@code dev.gatun.GraphInstall}.
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

    private static final Logger LOG = LoggerFactory.getLogger(UpdatingExecutable.class);

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
    private volatile GraphExec current;
    // Guarded by this.
    private GraphExec spare;
    private boolean closed;
    private long updates;
    private long spareUpdates;
    private long instantiations;
    private final Map<GraphUpdateResult, Long> refusals = new EnumMap<>(GraphUpdateResult.class);
    private final Map<GraphUpdateResult, Long> spareRefusals = new EnumMap<>(GraphUpdateResult.class);

    private UpdatingExecutable(GraphExec first) {
        this.context = first.context();
        this.current = first;
        this.instantiations = 1;
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
        GraphInstallEvent event = GraphInstallEvent.start();
        GraphUpdateReport refusal = current.tryUpdateExplained(next);
        if (refusal.applied()) {
            updates++;
            commit(event, Path.UPDATED, null);
            return UPDATED;
        }
        refusals.merge(refusal.result(), 1L, Long::sum);
        GraphExec replaced = current;
        Path path;
        GraphUpdateResult spareResult = spare == null ? null : spare.tryUpdate(next);
        if (spareResult != null && spareResult.applied()) {
            current = spare;
            spareUpdates++;
            path = Path.SPARE;
        } else {
            if (spareResult != null) {
                spareRefusals.merge(spareResult, 1L, Long::sum);
            }
            GraphExec made = next.instantiate();
            if (spare != null) {
                spare.close(); // retired once its last launch completed
            }
            current = made;
            instantiations++;
            path = Path.INSTANTIATED;
        }
        if (refusal.result() == GraphUpdateResult.MEMORY_NODES) {
            replaced.close();
            spare = null;
        } else {
            spare = replaced;
        }
        LOG.debug("{}: {} after the update in place was refused: {}", this, path, refusal);
        commit(event, path, refusal);
        return new Install(path, refusal);
    }

    private void commit(GraphInstallEvent event, Path path, GraphUpdateReport refusal) {
        if (event != null) {
            event.device = context.device().ordinal();
            event.path = path.name();
            if (refusal != null) {
                event.reason = refusal.result().name();
                event.errorNode = refusal.errorNode();
                event.errorFromNode = refusal.errorFromNode();
            }
            event.commit();
        }
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
    public synchronized boolean hasSpare() {
        return spare != null;
    }

    /** {@return the installs by path, and the refusals by reason} */
    public synchronized GraphInstallCounts counts() {
        return new GraphInstallCounts(updates, spareUpdates, instantiations, refusals, spareRefusals);
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
        if (spare != null) {
            spare.close();
            spare = null;
        }
    }

    @Override
    public String toString() {
        return "UpdatingExecutable[" + current + "]";
    }
}
