package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.events.GraphInstantiateEvent;
import java.lang.foreign.MemorySegment;

/**
 * A captured CUDA graph ({@link StreamCapture#end()}): a description of work, launched through
 * the executables {@link #instantiate()} makes from it.
 *
 * <p>It holds every owner its recorded work uses (buffers whose addresses it baked in, modules
 * whose kernels it launches) until it is destroyed, even if they are closed or their registry
 * name is replaced meanwhile. Closing it hands it to the context's retirement queue; an
 * executable made from it, or updated to run it, keeps it alive until that executable is
 * destroyed (the driver names an executable's nodes by those of the graph it was made from).
 */
public final class Graph extends Owner {

    private final CudaContext context;
    private final Resource resource;

    /** The graph handle, what it holds, and its retirement. */
    static final class Resource extends NativeResource {
        final MemorySegment handle;
        final Holds holds;

        Resource(ContextState state, MemorySegment handle, Holds holds) {
            super(state, OwnerKind.GRAPH);
            this.handle = handle;
            this.holds = holds;
        }

        @Override
        protected Retirement.Release howToFree() {
            return () -> {
                // Nothing is launched from a graph itself, and the executables made from it hold
                // it until they are destroyed: no work and no executable uses it any more.
                int r = context.calls().graphs().destroy(handle);
                holds.releaseAll(); // a graph is never launched: what it baked in is free to go
                return r;
            };
        }

        @Override
        protected boolean synchronizingFree() {
            return true; // it may free device memory the graph's nodes own
        }

        @Override
        public String identity() {
            return "Graph#" + id() + " (device " + context.device() + ")";
        }
    }

    Graph(CudaContext context, MemorySegment handle, Holds holds) {
        Resource r = new Resource(context.state(), handle, holds);
        super(r);
        this.context = context;
        this.resource = r;
    }

    /** Retires a graph no one will use (what an aborted capture recorded). */
    static void discard(CudaContext context, MemorySegment handle) {
        new Resource(context.state(), handle, new Holds()).close();
    }

    public CudaContext context() {
        return context;
    }

    /**
     * A new executable of this graph ({@code cuGraphInstantiate}), holding everything this graph
     * holds, and this graph itself.
     *
     * @throws IllegalStateException when this graph is closed
     */
    public GraphExec instantiate() {
        GraphInstantiateEvent event = GraphInstantiateEvent.start();
        boolean instantiated = false;
        try {
            GraphExec exec = new GraphExec(context, resource);
            instantiated = true;
            return exec;
        } finally {
            if (event != null) {
                event.device = context.device().ordinal();
                event.instantiated = instantiated;
                event.commit();
            }
        }
    }

    Resource resource() {
        return resource;
    }
}
