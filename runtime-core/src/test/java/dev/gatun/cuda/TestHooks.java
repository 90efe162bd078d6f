package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;

/** Test-only access to package-private state of the public API. */
public final class TestHooks {

    private TestHooks() {
    }

    /** The internal state of {@code context}, for tests of internal packages (the jcstress tests). */
    public static ContextState state(CudaContext context) {
        return context.state();
    }
}
