package dev.gatun.cuda.internal.memory;

/**
 * One context's recyclers of the device memory kinds on its allocation hot paths (a created
 * pool's allocations are recycled by their {@link PoolMemory}).
 */
public final class Recyclers {

    final Recycler<PooledBlock> blocks = new Recycler<>();
    final Recycler<StreamOrdered> streamOrdered = new Recycler<>();

    /** Freed blocks of the device pool kept for reuse. */
    public Recycler<PooledBlock> blocks() {
        return blocks;
    }

    /** Freed stream-ordered allocations kept for reuse. */
    public Recycler<StreamOrdered> streamOrdered() {
        return streamOrdered;
    }
}
