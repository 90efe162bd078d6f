package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;

/**
 * The native operations behind {@link GraphLifecycles}: on a GPU they are cuStreamBeginCapture,
 * cuStreamEndCapture, cuGraphInstantiate, cuGraphExecUpdate, cuGraphUpload, cuGraphLaunch,
 * cuGraphDestroy and cuGraphExecDestroy; CPU tests use a fake.
 *
 * <p>Graph and executable handles are the driver's opaque pointers as zero-length segments, so a
 * replay hands the stored segment straight to the downcall without wrapping (and allocating) a
 * new one. Every failure is an exception, normally a {@code CudaException}. A method that throws
 * has created nothing the caller must free.
 *
 * @param <S> the stream type captures and launches run on
 */
public interface GraphBackend<S> {

    /** Puts {@code stream} into capture mode. */
    void beginCapture(S stream, CaptureMode mode);

    /**
     * Ends the capture on {@code stream} and returns the captured graph. Throws when the capture
     * was invalidated; the lifecycle then treats the capture as over, as the driver does.
     */
    MemorySegment endCapture(S stream);

    /**
     * Instantiates an executable from {@code graph}. The graph stays owned by the caller, who
     * keeps it alive as long as the executable, even after the executable was updated to run
     * another graph: the driver names the executable's nodes by {@code graph}'s nodes.
     */
    MemorySegment instantiate(MemorySegment graph);

    /**
     * Updates {@code exec} in place so that later launches run {@code graph}.
     *
     * @return true when the update was applied; false when {@code graph}'s topology differs from
     *     the one {@code exec} was instantiated from, in which case {@code exec} is unchanged
     */
    boolean tryUpdate(MemorySegment exec, MemorySegment graph);

    /**
     * Uploads {@code exec} to the device on {@code stream} so that its first launch does not pay
     * for it. Stream-ordered work: once called, {@code exec} counts as submitted.
     */
    void upload(MemorySegment exec, S stream);

    /** Launches {@code exec} on {@code stream}. */
    void launch(MemorySegment exec, S stream);

    /**
     * Destroys a graph. Launches never reference a graph, only executables made from it; but an
     * executable's node updates do, so a graph is destroyed only after the executables
     * instantiated from it.
     */
    void destroyGraph(MemorySegment graph);

    /** Destroys an executable; only called once nothing submitted can still use it. */
    void destroyExec(MemorySegment exec);
}
