package dev.gatun.cuda.internal.transfer;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A context's pinned staging blocks: Java-heap data cannot be handed to a DMA engine (the GC
 * moves it), so it is copied through page-locked blocks. {@link SynchronousCopies} pipeline two
 * blocks (the host fills one while the device reads the other); asynchronous uploads
 * ({@link #uploadAsync}) take as many blocks as they need and return each to the pool through
 * the retirement queue once the copy's fence has completed.
 */
public final class StagingPool {

    private static final Logger LOG = LoggerFactory.getLogger(StagingPool.class);
    private static final String FREE_STAGING = "cuMemFreeHost(staging)";
    /** The size of one block, and so of one chunk of a staged copy. */
    public static final long BLOCK_BYTES = 4L << 20;
    private static final int MAX_RETAINED = 8;

    private final ContextState contextState;
    private final ArrayDeque<Block> free = new ArrayDeque<>();
    private int retained;
    private boolean closed;

    /** One page-locked block and the event that says when the device is done with it. */
    static final class Block {
        final MemorySegment host;
        private MemorySegment event;

        private Block(MemorySegment host) {
            this.host = host;
        }
    }

    public StagingPool(ContextState contextState) {
        this.contextState = contextState;
    }

    Block acquire() {
        synchronized (this) {
            Block b = free.pollFirst();
            if (b != null) {
                retained--;
                return b;
            }
        }
        long address;
        // Pinned allocation may synchronize, so it runs inside the capture gate.
        try (var _ = contextState.enterSection("cuMemHostAlloc(staging)")) {
            address = contextState.calls().memory().allocateHost(BLOCK_BYTES, false);
        }
        contextState.opened(OwnerKind.STAGING);
        // Safety: the driver returned BLOCK_BYTES of page-locked memory at this address, which
        // stays mapped until this pool frees it with cuMemFreeHost.
        return new Block(MemorySegment.ofAddress(address).reinterpret(BLOCK_BYTES));
    }

    /** Returns a block whose last copy completed (its fence, or the caller's synchronize). */
    int giveBack(Block b) {
        synchronized (this) {
            if (!closed && retained < MAX_RETAINED) {
                free.addFirst(b);
                retained++;
                return 0;
            }
        }
        return freeBlock(b);
    }

    /** Hands a block a failed copy may still use to retirement, which returns it after {@code copy}'s fence. */
    void giveBackAfter(Block b, StreamState copy) {
        contextState.retirement().submit(new Retirement("staging block (failed copy)", OwnerKind.STAGING,
                List.of(copy.fence()), () -> giveBack(b), true));
    }

    /** Records the block's event on {@code copy}, after the chunk just queued there. */
    void record(Block b, StreamState copy) {
        if (b.event == null) {
            b.event = contextState.events().acquire();
        }
        // A pooled event of this context, recorded on the open synchronous stream.
        contextState.calls().events().record(b.event, copy.handle());
    }

    /** Blocks until the chunk last queued through {@code b} has completed. */
    void await(Block b) {
        // The block's event was recorded after its last chunk.
        contextState.calls().events().synchronize(b.event);
    }

    private int freeBlock(Block b) {
        if (b.event != null) {
            contextState.events().release(b.event);
            b.event = null;
        }
        // The block's last copy completed (its fence, or the caller's synchronize).
        int r = contextState.calls().memory().freeHost(b.host.address());
        if (r == 0) {
            contextState.closed(OwnerKind.STAGING);
        }
        return r;
    }

    /** Frees the pooled blocks (context shutdown); blocks still in flight are freed when they come back. */
    public void close() {
        List<Block> blocks;
        synchronized (this) {
            closed = true;
            blocks = List.copyOf(free);
            free.clear();
            retained = 0;
        }
        if (blocks.isEmpty()) {
            return;
        }
        if (contextState.poisoned()) {
            // A sticky error: the driver can free nothing more. The blocks stay mapped until the
            // process ends; they are no longer counted as this context's.
            LOG.warn("Abandoning {} pinned staging block(s) of {}: the context is poisoned by a sticky error",
                    blocks.size(), contextState);
            for (int i = 0; i < blocks.size(); i++) {
                contextState.closed(OwnerKind.STAGING);
                contextState.stats().retirementsAbandoned.increment();
            }
            return;
        }
        contextState.calls().checked().live(FREE_STAGING); // each free makes the context current itself
        try (var _ = contextState.enterSection(FREE_STAGING)) {
            for (Block b : blocks) {
                int r = freeBlock(b);
                if (r != 0) {
                    throw contextState.calls().checked().fail(r, FREE_STAGING);
                }
            }
        }
    }

    /**
     * Queues an upload of any host segment on {@code stream}: the bytes are copied into blocks
     * now (so the caller may reuse the source at once), and each block returns to the pool once
     * its copy's fence completes.
     *
     * @param destination the device address of a range of {@code source.byteSize()} bytes, inside
     *     an open allocation that already lists {@code stream}
     */
    public void uploadAsync(StreamState stream, long destination, MemorySegment source) {
        long n = source.byteSize();
        for (long offset = 0; offset < n; offset += BLOCK_BYTES) {
            long length = Math.min(BLOCK_BYTES, n - offset);
            Block block = acquire();
            MemorySegment.copy(source, offset, block.host, 0, length);
            try {
                // The block is pinned, owned by this pool, and handed to retirement below with a
                // fence recorded after this copy: it is not reused before the copy is done.
                contextState.calls().memory().copyToDevice(destination + offset, block.host, length, stream.handle());
            } finally {
                stream.submitted(); // a failed copy may have queued work too
                contextState.retirement().submit(new Retirement("staging block (upload)", OwnerKind.STAGING,
                        List.of(stream.fence()), () -> giveBack(block), true));
            }
        }
        contextState.stats().hostToDeviceCopies.increment();
        contextState.stats().hostToDeviceBytes.add(n);
    }
}
