package dev.gatun.cuda;

import dev.gatun.cuda.internal.events.GraphInstallEvent;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One step of the update-or-instantiate policy, with at most one spare executable: what
 * {@link UpdatingExecutable} runs for its executable, and runtime-graph's {@code GraphSlot} for
 * each re-captured segment (one installer per slot, so one spare per slot). {@link #install}
 * makes a new graph run in place of an executable: by updating it in place
 * ({@code cuGraphExecUpdate}), where refused by updating the spare, and where that is refused
 * too by instantiating the graph. The executable the last two paths replace becomes the spare,
 * except after a refusal for {@link GraphUpdateResult#MEMORY_NODES} (an executable of a graph
 * with memory nodes would keep its graph memory). Every path and every refusal's reason is
 * counted ({@link #counters()}), logged at DEBUG with the nodes the driver blamed, and recorded as
 * a JFR event {@code dev.gatun.GraphInstall}.
 *
 * <p>Not an owner: the holder publishes what {@link #install} returns as its executable, closes
 * what it {@linkplain Result#dropped() dropped} once no launch can reach those any more, and
 * closes the spare ({@link #releaseSpare()}) when it is done. The spare is never launched while
 * it is one; its launches from before may still be running when it is updated, which the driver
 * allows (an update applies to the launches after it; launches already queued run what they were
 * launched with), and {@link GraphExec} keeps its update apart from any launch call.
 *
 * <p>Thread-safe: installs are serialized; {@link #counters()} takes no lock.
 */
public final class GraphInstaller {

    private static final Logger LOG = LoggerFactory.getLogger(GraphInstaller.class);
    private static final GraphUpdateResult[] RESULTS = GraphUpdateResult.values();

    /**
     * What one {@link #install} did.
     *
     * @param current the executable to launch from now on: the one installed into, the spare, or
     *     a new one
     * @param path how the graph was installed
     * @param refusal why the executable installed into refused the update, with the nodes the
     *     driver blamed; null when it was updated in place
     * @param dropped executables the installer let go of (the previous spare, or the one installed
     *     into when it may not be kept): the caller closes them once its launches can no longer
     *     reach them
     */
    public record Result(GraphExec current, UpdatingExecutable.Path path, GraphUpdateReport refusal,
            List<GraphExec> dropped) {

        /** Copies the list. */
        public Result {
            dropped = List.copyOf(dropped);
        }
    }

    /** Installs by path, indexed by {@link UpdatingExecutable.Path#ordinal()}. */
    private final AtomicLongArray paths = new AtomicLongArray(UpdatingExecutable.Path.values().length);
    /** Refused updates of the executable installed into, indexed by {@link GraphUpdateResult#ordinal()}. */
    private final AtomicLongArray refusals = new AtomicLongArray(RESULTS.length);
    /** Refused updates of the spare, indexed the same way. */
    private final AtomicLongArray spareRefusals = new AtomicLongArray(RESULTS.length);
    // Guarded by this.
    private GraphExec spare;

    /** An installer with no spare and nothing counted. */
    public GraphInstaller() {
    }

    /**
     * Makes {@code next} run in place of {@code current}: updates {@code current} in place, or
     * the spare (when it is of {@code next}'s context), or instantiates {@code next} and runs
     * {@code prepare} on the new executable, in that order. The caller must not launch
     * {@code current} after this returns unless it is {@link Result#current()}, and may close
     * {@code next} afterwards (the executables hold what they need of it).
     *
     * @param current the executable launches ran until now; not closed
     * @param next the new graph
     * @param prepare what to do with a newly instantiated executable before it is installed (an
     *     upload, say); when it throws, the new executable is closed, nothing is installed and
     *     the spare is kept
     * @return what was installed, and what to close
     * @throws IllegalArgumentException when {@code next} is of another context than {@code current}
     * @throws CudaException when an update fails otherwise, or the instantiation fails; nothing
     *     is installed then, and the spare is kept (see {@link GraphExec#tryUpdate} for an update
     *     that failed after it may have applied)
     */
    public synchronized Result install(GraphExec current, Graph next, Consumer<? super GraphExec> prepare) {
        Objects.requireNonNull(current, "current");
        Objects.requireNonNull(next, "next");
        Objects.requireNonNull(prepare, "prepare");
        GraphInstallEvent event = GraphInstallEvent.start();
        GraphUpdateReport refusal = current.tryUpdateExplained(next);
        if (refusal.isApplied()) {
            paths.getAndIncrement(UpdatingExecutable.Path.UPDATED.ordinal());
            commit(event, current, UpdatingExecutable.Path.UPDATED, null);
            return new Result(current, UpdatingExecutable.Path.UPDATED, null, List.of());
        }
        refusals.getAndIncrement(refusal.result().ordinal());
        // A spare of another context (a slot's segments may be captured on several) cannot take the graph.
        GraphUpdateResult spareResult = spare == null || spare.context() != next.context() ? null : spare.tryUpdate(next);
        List<GraphExec> dropped = new ArrayList<>(2);
        GraphExec installed;
        UpdatingExecutable.Path path;
        if (spareResult != null && spareResult.isApplied()) {
            installed = spare;
            path = UpdatingExecutable.Path.SPARE;
        } else {
            if (spareResult != null) {
                spareRefusals.getAndIncrement(spareResult.ordinal());
            }
            installed = prepared(next.instantiate(), prepare);
            if (spare != null) {
                dropped.add(spare);
            }
            path = UpdatingExecutable.Path.INSTANTIATED;
        }
        if (refusal.result() == GraphUpdateResult.MEMORY_NODES) {
            dropped.add(current);
            spare = null;
        } else {
            spare = current;
        }
        paths.getAndIncrement(path.ordinal());
        LOG.debug("{} after the update of {} in place was refused: {}", path, current, refusal);
        commit(event, current, path, refusal);
        return new Result(installed, path, refusal, dropped);
    }

    /** Runs {@code prepare} on {@code made}; if it throws, closes {@code made} and rethrows. */
    private static GraphExec prepared(GraphExec made, Consumer<? super GraphExec> prepare) {
        try {
            prepare.accept(made);
            return made;
        } catch (RuntimeException | Error e) {
            // What prepare queued may still be on a stream: retirement waits for its fence.
            try {
                made.close();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    private static void commit(GraphInstallEvent event, GraphExec current, UpdatingExecutable.Path path,
            GraphUpdateReport refusal) {
        if (event != null) {
            event.device = current.context().device().ordinal();
            event.path = path.name();
            if (refusal != null) {
                event.reason = refusal.result().name();
                event.errorNode = refusal.errorNode();
                event.errorFromNode = refusal.errorFromNode();
            }
            event.commit();
        }
    }

    /** {@return whether a spare executable is kept now} */
    public synchronized boolean hasSpare() {
        return spare != null;
    }

    /**
     * Lets go of the spare: the caller closes what this returns (each executable is destroyed
     * once its last launch has completed).
     *
     * @return the spare executable, no longer kept; null when there was none
     */
    public synchronized GraphExec releaseSpare() {
        GraphExec released = spare;
        spare = null;
        return released;
    }

    /**
     * {@return the installs by path and the refusals by reason, taken without a lock} The
     * instantiations are those of {@link #install} alone (a holder's first executable is its own).
     */
    public GraphInstallCounters counters() {
        return new GraphInstallCounters(paths.get(UpdatingExecutable.Path.UPDATED.ordinal()),
                paths.get(UpdatingExecutable.Path.SPARE.ordinal()),
                paths.get(UpdatingExecutable.Path.INSTANTIATED.ordinal()), byReason(refusals), byReason(spareRefusals));
    }

    private static Map<GraphUpdateResult, Long> byReason(AtomicLongArray counts) {
        Map<GraphUpdateResult, Long> byReason = new EnumMap<>(GraphUpdateResult.class);
        for (GraphUpdateResult r : RESULTS) {
            long n = counts.get(r.ordinal());
            if (n > 0) {
                byReason.put(r, n);
            }
        }
        return byReason;
    }

    @Override
    public String toString() {
        return "GraphInstaller[" + counters() + "]";
    }
}
