package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A context's pinned staging blocks, and the copies that use them: Java-heap data cannot be
 * handed to a DMA engine (the GC moves it), so it is copied through page-locked blocks.
 * Synchronous copies pipeline two blocks (the host fills one while the device reads the
 * other); asynchronous uploads take as many blocks as they need and return each to the pool
 * through the retirement queue once the copy's fence has completed.
 *
 * <p>Synchronous copies run on the context's copy stream, after making it wait for the work
 * queued so far on every stream of the context (and on other devices' streams that used the
 * buffers involved): a copy never reads bytes a kernel or graph replay is still writing, nor
 * overwrites bytes one is still reading.
 */
final class StagingPool {

    private static final Logger LOG = LoggerFactory.getLogger(StagingPool.class);
    private static final String FREE_STAGING = "cuMemFreeHost(staging)";
    static final long BLOCK_BYTES = 4L << 20;
    static final int MAX_RETAINED = 8;

    private final CudaContext context;
    private final ContextState core;
    private final ArrayDeque<Block> free = new ArrayDeque<>();
    private int retained;
    private boolean closed;

    /** One page-locked block and the event that says when the device is done with it. */
    private static final class Block {
        final MemorySegment host;
        MemorySegment event;

        Block(MemorySegment host) {
            this.host = host;
        }
    }

    StagingPool(CudaContext context) {
        this.context = context;
        this.core = context.state();
    }

    /** Blocks held in the pool now (allocated, not in use). */
    synchronized int blocks() {
        return retained;
    }

    private Block acquire() {
        synchronized (this) {
            Block b = free.pollFirst();
            if (b != null) {
                retained--;
                return b;
            }
        }
        long address;
        // Pinned allocation may synchronize, so it runs inside the capture gate.
        try (var _ = core.enterSection("cuMemHostAlloc(staging)")) {
            address = core.calls().memory().allocateHost(BLOCK_BYTES, false);
        }
        core.opened(OwnerKind.STAGING);
        // Safety: the driver returned BLOCK_BYTES of page-locked memory at this address, which
        // stays mapped until this pool frees it with cuMemFreeHost.
        return new Block(MemorySegment.ofAddress(address).reinterpret(BLOCK_BYTES));
    }

    private int giveBack(Block b) {
        synchronized (this) {
            if (!closed && retained < MAX_RETAINED) {
                free.addFirst(b);
                retained++;
                return 0;
            }
        }
        return freeBlock(b);
    }

    private int freeBlock(Block b) {
        if (b.event != null) {
            core.events().release(b.event);
            b.event = null;
        }
        // The block's last copy completed (its fence, or the caller's synchronize).
        int r = core.calls().memory().freeHost(b.host.address());
        if (r == 0) {
            core.closed(OwnerKind.STAGING);
        }
        return r;
    }

    /** Frees the pooled blocks (context shutdown); blocks still in flight are freed when they come back. */
    void close() {
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
        if (core.poisoned()) {
            // A sticky error: the driver can free nothing more. The blocks stay mapped until the
            // process ends; they are no longer counted as this context's.
            LOG.warn("Abandoning {} pinned staging block(s) of {}: the context is poisoned by a sticky error",
                    blocks.size(), core);
            for (int i = 0; i < blocks.size(); i++) {
                core.closed(OwnerKind.STAGING);
                core.stats().retirementsAbandoned.increment();
            }
            return;
        }
        core.calls().context().makeCurrent(FREE_STAGING); // the frees act on the current context
        try (var _ = core.enterSection(FREE_STAGING)) {
            for (Block b : blocks) {
                int r = freeBlock(b);
                if (r != 0) {
                    throw core.calls().checked().fail(r, FREE_STAGING);
                }
            }
        }
    }

    // ---- copies through the blocks ----

    /** Copies a host segment to the device and returns when it has arrived. */
    void uploadSync(DeviceView destination, MemorySegment source) {
        long n = destination.byteLength();
        StreamState copy = enterSynchronous("copyFrom(host)", destination.buffer(), null);
        destination.useOn(context, copy);
        if (n > 0) {
            if (source.isNative()) {
                // The caller's segment is alive for this call, and the call synchronizes the copy
                // stream before it returns; the device range is checked and open.
                core.calls().memory().copyToDevice(destination.address(), source, n, copy.handle());
                synchronize(copy);
            } else {
                pipeline(copy, n, (block, offset, length) -> {
                    MemorySegment.copy(source, offset, block.host, 0, length);
                    // The block is pinned and owned by this pool; the device range is checked.
                    core.calls().memory().copyToDevice(destination.address() + offset, block.host, length,
                            copy.handle());
                }, null);
            }
        }
        core.stats().hostToDeviceCopies.increment();
        core.stats().hostToDeviceBytes.add(n);
    }

    /** Copies device bytes into a host segment and returns when they have arrived. */
    void downloadSync(MemorySegment destination, DeviceView source) {
        long n = source.byteLength();
        StreamState copy = enterSynchronous("copyTo(host)", source.buffer(), null);
        source.useOn(context, copy);
        if (n > 0) {
            if (destination.isNative()) {
                // As in uploadSync; the destination segment is alive and writable.
                core.calls().memory().copyToHost(destination, source.address(), n, copy.handle());
                synchronize(copy);
            } else {
                pipeline(copy, n, (block, offset, length) ->
                        // The block is pinned and owned by this pool; the device range is checked.
                        core.calls().memory().copyToHost(block.host, source.address() + offset, length, copy.handle()),
                        (block, offset, length) -> MemorySegment.copy(block.host, 0, destination, offset, length));
            }
        }
        core.stats().deviceToHostCopies.increment();
        core.stats().deviceToHostBytes.add(n);
    }

    /** Copies device to device (this context's destination; a source on any device) and returns when done. */
    void copySync(DeviceView destination, DeviceView source) {
        StreamState copy = enterSynchronous("copyFrom(device)", destination.buffer(), source.buffer());
        context.copyStream().copy(destination, source);
        synchronize(copy);
    }

    /**
     * Queues an upload of any host segment on {@code stream}: the bytes are copied into blocks
     * now (so the caller may reuse the source at once), and each block returns to the pool once
     * its copy's fence completes.
     */
    void uploadAsync(StreamState stream, long destination, MemorySegment source) {
        long n = source.byteSize();
        for (long offset = 0; offset < n; offset += BLOCK_BYTES) {
            long length = Math.min(BLOCK_BYTES, n - offset);
            Block block = acquire();
            MemorySegment.copy(source, offset, block.host, 0, length);
            try {
                // The block is pinned, owned by this pool, and handed to retirement below with a
                // fence recorded after this copy: it is not reused before the copy is done.
                core.calls().memory().copyToDevice(destination + offset, block.host, length, stream.handle());
            } finally {
                stream.submitted(); // a failed copy may have queued work too
                core.retirement().submit(new Retirement("staging block (upload)", OwnerKind.STAGING,
                        List.of(stream.fence()), () -> giveBack(block), true));
            }
        }
        core.stats().hostToDeviceCopies.increment();
        core.stats().hostToDeviceBytes.add(n);
    }

    /** One chunk of a pipelined copy: queues its device side, or throws. */
    @FunctionalInterface
    private interface Chunk {
        void run(Block block, long offset, long length);
    }

    /** The host side of a chunk after the device side completed (downloads copy out of the block). */
    @FunctionalInterface
    private interface Drain {
        void run(Block block, long offset, long length);
    }

    /**
     * Moves {@code n} bytes in block-sized chunks through two blocks, so that the host works on
     * one while the device works on the other. {@code submit} queues a chunk's device side;
     * {@code drain}, when not null, runs after that chunk completed (for downloads).
     */
    private void pipeline(StreamState copy, long n, Chunk submit, Drain drain) {
        long chunks = (n + BLOCK_BYTES - 1) / BLOCK_BYTES;
        Block[] blocks = {acquire(), chunks > 1 ? acquire() : null};
        boolean completed = false;
        try {
            long issued = 0;
            for (long i = 0; i < chunks; i++) {
                // Keep up to two chunks in flight: issue ahead, then finish chunk i.
                while (issued < chunks && issued <= i + 1) {
                    Block b = blocks[(int) (issued & 1)];
                    if (issued >= 2) {
                        awaitBlock(b);
                    }
                    long offset = issued * BLOCK_BYTES;
                    submit.run(b, offset, Math.min(BLOCK_BYTES, n - offset));
                    recordBlock(b, copy);
                    issued++;
                }
                if (drain != null) {
                    Block b = blocks[(int) (i & 1)];
                    awaitBlock(b);
                    long offset = i * BLOCK_BYTES;
                    drain.run(b, offset, Math.min(BLOCK_BYTES, n - offset));
                }
            }
            synchronize(copy);
            completed = true;
        } finally {
            for (Block b : blocks) {
                if (b == null) {
                    continue;
                }
                if (completed) {
                    giveBack(b);
                } else {
                    // A chunk may still be in flight: the block goes back only after a fence.
                    core.retirement().submit(new Retirement("staging block (failed copy)", OwnerKind.STAGING,
                            List.of(copy.fence()), () -> giveBack(b), true));
                }
            }
        }
    }

    private void recordBlock(Block b, StreamState copy) {
        if (b.event == null) {
            b.event = core.events().acquire();
        }
        // A pooled event of this context, recorded on the open copy stream.
        core.calls().events().record(b.event, copy.handle());
    }

    private void awaitBlock(Block b) {
        // The block's event was recorded after its last chunk.
        core.calls().events().synchronize(b.event);
    }

    private void synchronize(StreamState copy) {
        core.stats().forcedSynchronizations.increment();
        // The context's own copy stream, open while the context is.
        core.calls().streams().synchronize(copy.handle());
    }

    /**
     * Enters a synchronous copy: refuses it on a thread that is capturing in global mode, then
     * orders the copy stream after every piece of work queued so far that may touch the
     * buffers involved ({@link dev.gatun.cuda.internal.context.SyncOrdering}): all of this
     * context's streams, the streams of the buffer's own context when it is another device's,
     * and other devices' streams that used the buffer (peer copies).
     */
    private StreamState enterSynchronous(String operation, DeviceBuffer first, DeviceBuffer second) {
        core.ordering().refuseDuringOwnCapture(operation);
        StreamState copy = context.copyStream().openState();
        core.ordering().orderAfterQueuedWork(copy);
        orderAfterForeignWork(copy, first);
        if (second != null) {
            orderAfterForeignWork(copy, second);
        }
        return copy;
    }

    private void orderAfterForeignWork(StreamState copy, DeviceBuffer buffer) {
        NativeResource resource = buffer.resource();
        if (resource.context() != core) {
            resource.context().ordering().orderForeignWaiterAfterAllWork(copy);
        }
        resource.orderAfterForeignUses(copy);
    }
}
