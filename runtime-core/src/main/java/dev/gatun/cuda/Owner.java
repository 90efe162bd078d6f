package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import java.lang.ref.Cleaner;

/**
 * What every public owner shares: its resource (which holds the native handle and does the
 * retiring), the Cleaner registration that reports and retires it if it is never closed, an
 * idempotent {@link #close()}, and its identity as {@link #toString()}.
 */
abstract class Owner implements AutoCloseable {

    /** How an owner stands to its resource. */
    enum Tie {
        /** The usual: the owner's own resource, which the Cleaner reports and retires if the owner is never closed. */
        OWNS,
        /**
         * Its own resource, which another owner also closes (a growable buffer's views, closed by
         * a shrink or by the buffer's close): no Cleaner reports it when it becomes unreachable.
         */
        CLOSED_BY_ANOTHER,
        /**
         * Another owner's resource (a conditional node's body graph, which its graph owns and
         * retires): no Cleaner registration, and closing it closes only the view.
         */
        VIEWS
    }

    private final NativeResource resource;
    /** Null unless the tie is {@link Tie#OWNS}. */
    private final Cleaner.Cleanable cleanable;
    private final boolean view;
    private volatile boolean viewClosed;

    Owner(NativeResource resource) {
        this(resource, Tie.OWNS);
    }

    Owner(NativeResource resource, Tie tie) {
        this.resource = resource;
        this.view = tie == Tie.VIEWS;
        switch (tie) {
            case OWNS -> this.cleanable = resource.watch(this);
            case CLOSED_BY_ANOTHER -> {
                resource.listWithoutCleaner();
                this.cleanable = null;
            }
            case VIEWS -> this.cleanable = null;
            default -> throw new AssertionError(tie);
        }
    }

    /**
     * {@return whether this owner has been closed (its handle handed to retirement); a view also when it
     * was closed itself}
     */
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
        if (view) {
            viewClosed = true;
        } else if (resource.close() && cleanable != null) {
            cleanable.clean();
        }
    }

    @Override
    public String toString() {
        return resource.identity();
    }
}
