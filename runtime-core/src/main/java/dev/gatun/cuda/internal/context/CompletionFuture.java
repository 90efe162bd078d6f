package dev.gatun.cuda.internal.context;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The future {@code onComplete} returns: one per call, owned by its caller, and never shared with
 * another caller or kept as Gatun's own state. {@link Completions} completes it through its
 * executor once the host function behind the work has fired. Completing it from outside
 * ({@link #cancel}, {@link #complete}, {@link #completeExceptionally}, {@code orTimeout}) detaches
 * it: Gatun forgets its token, the GPU work and the host function still run, and the host
 * function's firing is then ignored.
 */
final class CompletionFuture extends CompletableFuture<Void> implements Runnable {

    final long token;
    final ContextState context;
    final Executor executor;

    CompletionFuture(long token, ContextState context, Executor executor) {
        this.token = token;
        this.context = context;
        this.executor = executor;
    }

    /** The executor's task: the work is complete. */
    @Override
    public void run() {
        super.complete(null);
    }

    /** Fails it with {@code error} (a poisoned or closed context); run on the executor. */
    void fail(Throwable error) {
        super.completeExceptionally(error);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        boolean cancelled = super.cancel(mayInterruptIfRunning);
        Completions.detach(this);
        return cancelled;
    }

    @Override
    public boolean complete(Void value) {
        boolean completed = super.complete(value);
        Completions.detach(this);
        return completed;
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean completed = super.completeExceptionally(ex);
        Completions.detach(this);
        return completed;
    }
}
