package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * A dropped segment's handles on their way to destruction: a graph, and its executable unless the
 * executable lives on (after an in-place update only the replaced graph is dropped).
 * {@link #destroy()} frees what is left and may be retried after it throws.
 */
public final class RetiredSegment {

    private final String identity;
    private final GraphBackend<?> backend;
    private MemorySegment graph;
    private MemorySegment exec;

    RetiredSegment(String identity, GraphBackend<?> backend, MemorySegment graph, MemorySegment exec) {
        this.identity = identity;
        this.backend = backend;
        this.graph = Objects.requireNonNull(graph, "graph");
        this.exec = Objects.requireNonNull(exec, "exec");
    }

    /** Who the segment belonged to, for logs, e.g. {@code owner 'session-1' slot 'decode' segment 2}. */
    public String identity() {
        return identity;
    }

    /** The graph handle, or {@link MemorySegment#NULL} once destroyed. */
    public synchronized MemorySegment graph() {
        return graph;
    }

    /** The executable handle, or {@link MemorySegment#NULL} when none is dropped or it is destroyed. */
    public synchronized MemorySegment exec() {
        return exec;
    }

    /** Whether both handles have been destroyed. */
    public synchronized boolean destroyed() {
        return graph.address() == 0 && exec.address() == 0;
    }

    /**
     * Destroys the executable, then the graph, through the backend. A handle is forgotten only
     * once its destroy succeeded, so after a failure a later call retries exactly what is left
     * and never frees a handle twice.
     */
    public synchronized void destroy() {
        if (exec.address() != 0) {
            backend.destroyExec(exec);
            exec = MemorySegment.NULL;
        }
        if (graph.address() != 0) {
            backend.destroyGraph(graph);
            graph = MemorySegment.NULL;
        }
    }

    @Override
    public String toString() {
        return "RetiredSegment[" + identity + "]";
    }

    /**
     * Hands every segment to {@code retirement}, even when one hand-over throws: the rest must not
     * leak because of it. The first failure is rethrown with the others suppressed.
     */
    static void handAll(GraphRetirement retirement, List<RetiredSegment> segments) {
        RuntimeException first = null;
        for (RetiredSegment segment : segments) {
            try {
                retirement.retire(segment);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
