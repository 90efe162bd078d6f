package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import java.lang.ref.Cleaner;

/**
 * What every public owner shares: its resource (which holds the native handle and does the
 * retiring), the Cleaner registration that reports and retires it if it is never closed, an
 * idempotent {@link #close()}, and its identity as {@link #toString()}.
 */
abstract class Owner implements AutoCloseable {

    private final NativeResource resource;
    /** Null for a view: the owner of the resource has the Cleaner registration. */
    private final Cleaner.Cleanable cleanable;
    private volatile boolean viewClosed;

    Owner(NativeResource resource) {
        this(resource, false);
    }

    /**
     * With {@code view}, a view of {@code resource}, which another owner owns and retires (a
     * conditional node's body graph, which its graph owns): the view has no Cleaner
     * registration, and closing it closes only the view, never the resource.
     */
    Owner(NativeResource resource, boolean view) {
        this.resource = resource;
        this.cleanable = view ? null : resource.watch(this);
    }

    /** Whether this owner has been closed (its handle handed to retirement); a view also when it was closed itself. */
    public boolean isClosed() {
        return viewClosed || resource.isClosed();
    }

    /**
     * Hands the native handle to the context's retirement queue, which frees it once the GPU
     * work queued on every stream that used it has completed. Idempotent. A view is only marked
     * closed: what it views stays with its owner.
     */
    @Override
    public void close() {
        if (cleanable == null) {
            viewClosed = true;
        } else if (resource.close()) {
            cleanable.clean();
        }
    }

    @Override
    public String toString() {
        return resource.identity();
    }
}
