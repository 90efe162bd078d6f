package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, the context itself: synchronizing it, its stream priority range and peer access
 * (each makes it current first: see {@link Checked#current}). Each call names its operation once, owns its out-parameters and checks its
 * result.
 */
public final class ContextCalls {

    private static final String SYNCHRONIZE = "cuCtxSynchronize";
    private static final String PRIORITY_RANGE = "cuCtxGetStreamPriorityRange";
    private static final String ENABLE_PEER = "cuCtxEnablePeerAccess";
    private static final int ALREADY_ENABLED = CudaDriver.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED();

    private final Checked c;

    ContextCalls(Checked c) {
        this.c = c;
    }

    /** The stream priorities the device allows: lower numbers mean higher priority. */
    public record StreamPriorities(int least, int greatest) {
    }

    /** Blocks until all work of this context has completed; synchronizes the device: call it inside the gate. */
    public void synchronize() {
        c.current(SYNCHRONIZE);
        // Safety: the context is current; the call takes no arguments.
        c.check(c.api.cuCtxSynchronize(), SYNCHRONIZE);
    }

    public StreamPriorities streamPriorities() {
        c.current(PRIORITY_RANGE);
        MemorySegment out = c.out();
        // Safety: out holds the two ints the driver writes; the context is current.
        c.check(c.api.cuCtxGetStreamPriorityRange(out, out.asSlice(4)), PRIORITY_RANGE);
        return new StreamPriorities(out.get(ValueLayout.JAVA_INT, 0), out.get(ValueLayout.JAVA_INT, 4));
    }

    /**
     * Lets this context access {@code peer}'s memory; already enabled is success. May
     * synchronize: call it inside the gate.
     *
     * @param peer another device's retained primary context, which the caller checked it can access
     * @param peerDevice that device's ordinal, for the error message
     */
    public void enablePeerAccess(MemorySegment peer, int peerDevice) {
        c.current(ENABLE_PEER);
        // Safety: peer is a retained primary context of the same driver; flags must be 0.
        int r = c.api.cuCtxEnablePeerAccess(peer, 0);
        if (r != 0 && r != ALREADY_ENABLED) {
            throw c.fail(r, ENABLE_PEER + "(device " + peerDevice + ")");
        }
    }
}
