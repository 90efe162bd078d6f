package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.driver.VirtualMemoryCalls;

/** A chunk of a {@link VmmReservation} whose unmap or release failed during growth or shrink, retried by retirement. */
final class VmmChunk implements Retirement.Release {

    private final VmmReservation owner;
    private final int index;
    private final long address;
    private final long handle;
    private boolean mapped;

    VmmChunk(VmmReservation owner, int index, long address, long handle, boolean mapped) {
        this.owner = owner;
        this.index = index;
        this.address = address;
        this.handle = handle;
        this.mapped = mapped;
    }

    @Override
    public int free() {
        VirtualMemoryCalls vm = owner.context().calls().virtualMemory();
        if (mapped) {
            // Safety: as when it was first unmapped: no work can reach the chunk any more.
            int r = vm.unmap(address, owner.chunkBytes);
            if (r != 0) {
                return r;
            }
            mapped = false;
        }
        int r = vm.release(handle);
        if (r == 0) {
            owner.chunkGone();
        }
        return r;
    }

    @Override
    public void abandoned() {
        owner.chunkGone();
    }

    @Override
    public String toString() {
        return "chunk " + index + " of " + owner.identity();
    }
}
