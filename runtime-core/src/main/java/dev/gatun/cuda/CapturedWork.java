package dev.gatun.cuda;

import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Work that is captured again on every {@link #run} and replayed through an
 * {@link UpdatingExecutable} (CUDA.jl's {@code @captured}): each run captures the work on the
 * stream (into a {@link CaptureArena} when one is given), installs the graph (an update in place
 * where the driver allows) and launches it. When something invalidates a capture, the run does
 * the work once eagerly instead, on the same stream, and the next run captures again; such runs
 * are counted ({@link #eagerRuns()}).
 *
 * <p>The work queues on the stream it is given, and must close what it allocates there or leave
 * it to this object: buffers still open when a capture ends are closed once the graph is
 * installed (the executables keep what they use). Results go to buffers the caller owns.
 * Runs are serialized; {@link #close()} closes the executables.
 */
public final class CapturedWork implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(CapturedWork.class);

    private final CaptureMode mode;
    private final CaptureArena arena;
    // Guarded by this.
    private UpdatingExecutable exec;
    private long captures;
    private long eagerRuns;
    private boolean closed;

    private CapturedWork(CaptureMode mode, CaptureArena arena) {
        this.mode = Objects.requireNonNull(mode, "mode");
        this.arena = arena;
    }

    /**
     * Work captured in {@code mode}, its allocations graph memory (memory nodes).
     *
     * @param mode the capture mode of every run
     * @return the work's captures and executables, to close when done
     */
    public static CapturedWork of(CaptureMode mode) {
        return new CapturedWork(mode, null);
    }

    /**
     * Work captured in {@code mode} into {@code arena}: its allocations come from the arena.
     *
     * @param mode the capture mode of every run
     * @param arena the arena the captures allocate from
     * @return the work's captures and executables, to close when done
     */
    public static CapturedWork of(CaptureMode mode, CaptureArena arena) {
        return new CapturedWork(mode, Objects.requireNonNull(arena, "arena"));
    }

    /**
     * Captures {@code work} on {@code stream}, installs the graph and launches it; or, when the
     * capture is invalidated, runs {@code work} eagerly on {@code stream} once (the next run
     * captures again).
     *
     * @param stream the stream to capture and replay on
     * @param work queues the work on the stream it is given
     * @throws IllegalStateException when this is closed
     */
    public synchronized void run(Stream stream, Consumer<? super Stream> work) {
        Objects.requireNonNull(work, "work");
        if (closed) {
            throw new IllegalStateException("this CapturedWork is closed");
        }
        Graph graph;
        try (StreamCapture capture = arena == null ? stream.beginCapture(mode) : arena.beginCapture(stream, mode)) {
            work.accept(stream);
            graph = capture.end();
        } catch (CaptureInvalidatedException e) {
            eagerRuns++;
            LOG.debug("The capture on {} was invalidated ({}); running the work eagerly once, capturing again next "
                    + "time", stream, e.getMessage());
            work.accept(stream);
            return;
        }
        captures++;
        try (graph) {
            if (exec == null) {
                exec = UpdatingExecutable.instantiate(graph);
            } else {
                exec.install(graph);
            }
        } finally {
            graph.allocations().forEach(DeviceBuffer::close); // the executables hold what they use
        }
        exec.launch(stream);
    }

    /** {@return the runs that were captured and replayed} */
    public synchronized long captures() {
        return captures;
    }

    /** {@return the runs done eagerly because their capture was invalidated} */
    public synchronized long eagerRuns() {
        return eagerRuns;
    }

    /** {@return how the captured graphs were installed (updates, spare updates, instantiations, refusals); all zero before the first} */
    public synchronized GraphInstallCounters installCounters() {
        return exec == null ? new GraphInstallCounters(0, 0, 0, Map.of(), Map.of()) : exec.counters();
    }

    /** Closes the executables; each is destroyed once its last launch has completed. Idempotent. */
    @Override
    public synchronized void close() {
        closed = true;
        if (exec != null) {
            exec.close();
        }
    }
}
