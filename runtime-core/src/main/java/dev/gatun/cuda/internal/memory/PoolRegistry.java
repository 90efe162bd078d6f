package dev.gatun.cuda.internal.memory;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The CUDA memory pools of one context that are not destroyed yet (its view of the device's
 * default pool, the pools it created or imported), for the out-of-memory ladder's trims, the
 * soft limits and memory reports. Pools are made and destroyed on cold paths; the ladder and the
 * safe points iterate without locks.
 */
public final class PoolRegistry {

    private final CopyOnWriteArrayList<PoolMemory> pools = new CopyOnWriteArrayList<>();
    /** How many of them have a soft limit: safe points skip the walk while there are none. */
    private volatile int softLimited;

    void add(PoolMemory pool) {
        pools.add(pool);
        if (pool.softLimited()) {
            synchronized (this) {
                softLimited++;
            }
        }
    }

    void remove(PoolMemory pool) {
        if (pools.remove(pool) && pool.softLimited()) {
            synchronized (this) {
                softLimited--;
            }
        }
    }

    /** The pools now, in the order they were made. */
    List<PoolMemory> pools() {
        return pools;
    }

    /** Whether a pool with a soft limit exists. */
    boolean anySoftLimited() {
        return softLimited != 0;
    }
}
