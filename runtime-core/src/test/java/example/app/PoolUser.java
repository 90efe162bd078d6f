package example.app;

import dev.gatun.cuda.internal.pool.DevicePool;

/** Application code outside Gatun's packages, where the pool's call-site profile should point. */
public final class PoolUser {

    private PoolUser() {
    }

    public static long loadWeights(DevicePool pool, long bytes) {
        return pool.acquire(bytes);
    }

    public static long scratch(DevicePool pool, long bytes) {
        return pool.acquire(bytes);
    }
}
