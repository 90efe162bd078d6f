package dev.gatun.cuda.internal.driver;

import java.lang.foreign.MemorySegment;

/**
 * Layer 2, host functions: queues {@link HostFunction}'s one upcall stub behind a stream's work,
 * carrying a completion token. Each call names its operation once and checks its result.
 */
public final class CompletionCalls {

    private static final String LAUNCH_HOST_FUNC = "cuLaunchHostFunc";

    private final Checked c;

    CompletionCalls(Checked c) {
        this.c = c;
    }

    /**
     * Queues the host function on {@code stream}: once the work queued before it has completed,
     * the driver's own thread calls it with {@code token}, and it records the token in
     * {@link HostFunction#take()}'s queue. Does not block.
     *
     * @param stream a live stream of this context that is not capturing (the caller checked it)
     * @param token a positive number the host function hands back, or a negative one naming a
     *     {@linkplain HostFunction#register registered} callback it runs; the driver never reads through it
     */
    public void launchHostFunction(MemorySegment stream, long token) {
        c.live(LAUNCH_HOST_FUNC);
        // Safety: the function is the process's one upcall stub, allocated in the global arena
        // and never freed, and it neither throws nor calls CUDA (a callback's calls are refused); userData is a number the stub
        // reads as such, never an address anything dereferences; the stream is live per the caller.
        c.check(c.api.cuLaunchHostFunc(stream, HostFunction.stub(), MemorySegment.ofAddress(token)), LAUNCH_HOST_FUNC);
    }
}
