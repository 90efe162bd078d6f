package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.driver.Driver;

/** Test-only access to package-private constructors and state of the public API. */
public final class TestHooks {

    private TestHooks() {
    }

    public static Cuda cuda(Driver driver) {
        return new Cuda(driver);
    }

    /** The internal state of {@code context}, for tests of internal packages (the jcstress tests). */
    public static ContextState state(CudaContext context) {
        return context.state();
    }
}
