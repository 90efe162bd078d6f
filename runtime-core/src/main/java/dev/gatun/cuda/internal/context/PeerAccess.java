package dev.gatun.cuda.internal.context;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The devices whose memory one context can access directly ({@code cuCtxEnablePeerAccess}):
 * enabled once per ordered pair, thread-safe, and asked about without a lock on the launch path.
 */
public final class PeerAccess {

    private static final String ENABLE = "cuCtxEnablePeerAccess";

    private final ContextState context;
    /** Ordinals of the devices whose memory the context can access. */
    private final Set<Integer> peers = ConcurrentHashMap.newKeySet();

    PeerAccess(ContextState context) {
        this.context = context;
    }

    /** Whether {@link #enable} has made {@code peer}'s memory accessible to this context. */
    public boolean enabled(ContextState peer) {
        return peers.contains(peer.device());
    }

    /**
     * Enables access to {@code peer}'s memory, once: a second call, or a driver that reports it
     * already enabled, does nothing. The caller has checked that the two devices can access
     * each other.
     */
    public void enable(ContextState peer) {
        int ordinal = peer.device();
        synchronized (peers) {
            if (peers.contains(ordinal)) {
                return;
            }
            context.calls().live(ENABLE);
            // Enabling may synchronize, so it runs inside the gate.
            try (var _ = context.enterSection(ENABLE)) {
                context.calls().context().enablePeerAccess(peer.handle(), ordinal);
            }
            peers.add(ordinal);
        }
    }
}
