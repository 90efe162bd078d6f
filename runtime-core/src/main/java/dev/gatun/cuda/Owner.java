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
    private final Cleaner.Cleanable cleanable;

    Owner(NativeResource resource) {
        this(resource, true);
    }

    /**
     * @param watched false for an owner whose resource another owner closes (a growable buffer's
     *     views): no Cleaner reports it when it becomes unreachable
     */
    Owner(NativeResource resource, boolean watched) {
        this.resource = resource;
        if (watched) {
            this.cleanable = resource.watch(this);
        } else {
            resource.listWithoutCleaner();
            this.cleanable = null;
        }
    }

    /** Whether this owner has been closed (its handle handed to retirement). */
    public boolean isClosed() {
        return resource.isClosed();
    }

    /**
     * Hands the native handle to the context's retirement queue, which frees it once the GPU
     * work queued on every stream that used it has completed. Idempotent.
     */
    @Override
    public void close() {
        if (resource.close() && cleanable != null) {
            cleanable.clean();
        }
    }

    @Override
    public String toString() {
        return resource.identity();
    }
}
