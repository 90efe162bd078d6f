package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * A dropped segment's handles on their way to destruction: a graph, and its executable unless the
 * executable lives on (after an in-place update only the replaced graph is dropped), and the graph
 * the executable was instantiated from when that is another one (it lives as long as the
 * executable: see {@link Segment}). {@link #destroy()} frees what is left and may be retried after
 * it throws.
 */
public final class RetiredSegment {

    private final String identity;
    private final GraphBackend<?> backend;
    private MemorySegment graph;
    private MemorySegment exec;
    private MemorySegment origin;

    /** A graph, with the executable instantiated from it or {@link MemorySegment#NULL}. */
    RetiredSegment(String identity, GraphBackend<?> backend, MemorySegment graph, MemorySegment exec) {
        this(identity, backend, graph, exec, MemorySegment.NULL);
    }

    private RetiredSegment(String identity, GraphBackend<?> backend, MemorySegment graph, MemorySegment exec,
            MemorySegment origin) {
        this.identity = identity;
        this.backend = backend;
        this.graph = Objects.requireNonNull(graph, "graph");
        this.exec = Objects.requireNonNull(exec, "exec");
        this.origin = origin;
    }

    /** Everything a whole segment holds: its executable, its graph and, once updated, its origin graph. */
    static RetiredSegment whole(String identity, GraphBackend<?> backend, Segment segment) {
        return new RetiredSegment(identity, backend, segment.graph(), segment.exec(),
                segment.updated() ? segment.origin() : MemorySegment.NULL);
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

    /**
     * The graph the executable was instantiated from when it is not {@link #graph()} (the segment
     * was updated in place since), else {@link MemorySegment#NULL}; also NULL once destroyed.
     */
    public synchronized MemorySegment origin() {
        return origin;
    }

    /** Whether every handle has been destroyed. */
    public synchronized boolean destroyed() {
        return graph.address() == 0 && exec.address() == 0 && origin.address() == 0;
    }

    /**
     * Destroys the executable, then the graph, then the origin graph, through the backend (an
     * executable goes before the graph it was instantiated from). A handle is forgotten only once
     * its destroy succeeded, so after a failure a later call retries exactly what is left and
     * never frees a handle twice.
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
        if (origin.address() != 0) {
            backend.destroyGraph(origin);
            origin = MemorySegment.NULL;
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
