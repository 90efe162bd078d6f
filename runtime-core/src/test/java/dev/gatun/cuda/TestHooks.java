package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.Driver;

/** Test-only access to package-private constructors of the public API. */
public final class TestHooks {

    private TestHooks() {
    }

    public static Cuda cuda(Driver driver) {
        return new Cuda(driver);
    }
}
