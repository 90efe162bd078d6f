package dev.gatun.cuda.internal.transfer;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.events.SynchronousCopyEvent;
import dev.gatun.cuda.internal.memory.DeviceMemory;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A context's synchronous copies: each returns when its bytes have arrived. They run on the
 * context's synchronous stream (Gatun's own, never captured), after making it wait for the work
 * queued so far on every stream of
 * the context (and on other devices' streams that used the buffers involved): a copy never
 * reads bytes a kernel or graph replay is still writing, nor overwrites bytes one is still
 * reading (runtime-core/README.md, "Ordering of synchronous operations"). A native host segment
 * is copied directly; any other goes through {@link StagingPool} blocks, two at a time.
 */
public final class SynchronousCopies {

    private final ContextState contextState;
    private final StagingPool staging;

    public SynchronousCopies(ContextState contextState, StagingPool staging) {
        this.contextState = contextState;
        this.staging = staging;
    }

    /**
     * Copies a host segment to the device and returns when it has arrived.
     *
     * @param destination the allocation written, of this context
     * @param handle the buffer that stands for {@code destination}, and whose {@code address} was read
     * @param address the device address of the first byte written, inside {@code destination}
     * @param source {@code source.byteSize()} bytes, the length of the range written
     */
    public void upload(DeviceMemory destination, Object handle, long address, MemorySegment source) {
        long n = source.byteSize();
        SynchronousCopyEvent event = SynchronousCopyEvent.start();
        StreamState copy = enter("copyFrom(host)", destination, handle);
        if (n > 0) {
            if (source.isNative()) {
                // The caller's segment is alive for this call, and the call synchronizes the copy
                // stream before it returns; the device range is checked and open.
                contextState.calls().memory().copyToDevice(address, source, n, copy.handle());
                synchronize(copy);
            } else if (n <= StagingPool.BLOCK_BYTES) {
                uploadThroughOneBlock(copy, address, source, null, null, n);
            } else {
                pipeline(copy, n, (block, offset, length) -> {
                    MemorySegment.copy(source, offset, block.host, 0, length);
                    // The block is pinned and owned by the pool; the device range is checked.
                    contextState.calls().memory().copyToDevice(address + offset, block.host, length, copy.handle());
                }, null);
            }
        }
        uploaded(event, n, !source.isNative());
    }

    /**
     * Copies {@code count} elements of a Java array to the device and returns when they have
     * arrived. One that fits a staging block is copied into it straight from the array, with no
     * segment wrapped around the array: a small synchronous write allocates nothing.
     *
     * @param array a primitive array whose element type is {@code element}'s carrier
     */
    public void uploadArray(DeviceMemory destination, Object handle, long address, Object array, ValueLayout element,
            int count) {
        long n = element.byteSize() * count;
        if (n == 0 || n > StagingPool.BLOCK_BYTES) {
            upload(destination, handle, address, HeapArrays.segment(array));
            return;
        }
        SynchronousCopyEvent event = SynchronousCopyEvent.start();
        StreamState copy = enter("copyFrom(host)", destination, handle);
        uploadThroughOneBlock(copy, address, null, array, element, n);
        uploaded(event, n, true);
    }

    /**
     * Copies device bytes into a host segment and returns when they have arrived.
     *
     * @param source the allocation read, of this context
     * @param handle the buffer that stands for {@code source}, and whose {@code address} was read
     * @param address the device address of the first byte read, inside {@code source}
     * @param destination {@code destination.byteSize()} bytes, the length of the range read
     */
    public void download(MemorySegment destination, DeviceMemory source, Object handle, long address) {
        long n = destination.byteSize();
        SynchronousCopyEvent event = SynchronousCopyEvent.start();
        StreamState copy = enter("copyTo(host)", source, handle);
        if (n > 0) {
            if (destination.isNative()) {
                // As in upload; the destination segment is alive and writable.
                contextState.calls().memory().copyToHost(destination, address, n, copy.handle());
                synchronize(copy);
            } else if (n <= StagingPool.BLOCK_BYTES) {
                downloadThroughOneBlock(copy, address, destination, null, null, n);
            } else {
                pipeline(copy, n, (block, offset, length) ->
                        // The block is pinned and owned by the pool; the device range is checked.
                        contextState.calls().memory().copyToHost(block.host, address + offset, length, copy.handle()),
                        (block, offset, length) -> MemorySegment.copy(block.host, 0, destination, offset, length));
            }
        }
        downloaded(event, n, !destination.isNative());
    }

    /**
     * Copies device bytes into {@code count} elements of a Java array and returns when they have
     * arrived; as {@link #uploadArray}, a copy that fits a staging block allocates nothing (the
     * 4-byte readback of an inference loop).
     */
    public void downloadArray(Object array, ValueLayout element, int count, DeviceMemory source, Object handle,
            long address) {
        long n = element.byteSize() * count;
        if (n == 0 || n > StagingPool.BLOCK_BYTES) {
            download(HeapArrays.segment(array), source, handle, address);
            return;
        }
        SynchronousCopyEvent event = SynchronousCopyEvent.start();
        StreamState copy = enter("copyTo(host)", source, handle);
        downloadThroughOneBlock(copy, address, null, array, element, n);
        downloaded(event, n, true);
    }

    /**
     * Copies {@code bytes} device bytes from {@code from} (inside {@code source}) to {@code to}
     * (inside {@code destination}, of this context) and returns when they have arrived; the
     * source may be another device's memory (a peer copy, staged through the host by the driver
     * when peer access is off).
     */
    public void copyOnDevice(DeviceMemory destination, Object destinationHandle, long to, DeviceMemory source,
            Object sourceHandle, long from, long bytes) {
        StreamState copy = enterSynchronous("copyFrom(device)", destination, source);
        destination.usedBy(destinationHandle, copy);
        source.usedBy(sourceHandle, copy);
        if (source.context() == contextState) {
            // Both ranges are checked and inside open allocations of this context, which list the
            // synchronous stream; the copy is synchronized before this returns.
            contextState.calls().memory().copyOnDevice(to, from, bytes, copy.handle());
        } else {
            // As above, the source in an open allocation of another context of this driver, whose
            // handle is that device's retained primary context.
            contextState.calls().memory().copyPeer(to, contextState.handle(), from, source.context().handle(), bytes,
                    copy.handle());
        }
        synchronize(copy);
        contextState.stats().deviceToDeviceCopies.increment();
        contextState.stats().deviceToDeviceBytes.add(bytes);
    }

    /**
     * Enters a synchronous operation on one allocation and records its use on the synchronous
     * stream through {@code handle}, which must still stand for it once listed: the address the
     * caller read before is then the handle's own, and the allocation's close fences this stream.
     */
    private StreamState enter(String operation, DeviceMemory allocation, Object handle) {
        StreamState copy = enterSynchronous(operation, allocation, null);
        allocation.usedBy(handle, copy);
        return copy;
    }

    private void uploaded(SynchronousCopyEvent event, long n, boolean staged) {
        contextState.stats().hostToDeviceCopies.increment();
        contextState.stats().hostToDeviceBytes.add(n);
        record(event, "host-to-device", n, staged);
    }

    private void downloaded(SynchronousCopyEvent event, long n, boolean staged) {
        contextState.stats().deviceToHostCopies.increment();
        contextState.stats().deviceToHostBytes.add(n);
        record(event, "device-to-host", n, staged);
    }

    /** Commits a completed copy's JFR event (a failed copy's is dropped: its exception says enough). */
    private void record(SynchronousCopyEvent event, String direction, long bytes, boolean staged) {
        if (event != null) {
            event.device = contextState.device();
            event.direction = direction;
            event.bytes = bytes;
            event.staged = staged;
            event.commit();
        }
    }

    /**
     * Enters a synchronous operation on the allocations {@code first} and {@code second} (null
     * when there is one): refuses it on a thread that is capturing in global mode, then orders
     * the synchronous stream after every piece of work queued so far that may touch them
     * ({@link dev.gatun.cuda.internal.context.SyncOrdering}): all of this context's streams, the
     * streams of an allocation's own context when it is another device's, and other devices'
     * streams that used the allocations (peer copies). Queue the operation on the returned
     * synchronous stream, then {@link #synchronize} it. Call with no stream's lock held.
     *
     * @throws IllegalStateException when the context is closed
     */
    public StreamState enterSynchronous(String operation, NativeResource first, NativeResource second) {
        contextState.ordering().refuseDuringOwnCapture(operation);
        contextState.checkOpen();
        StreamState copy = contextState.syncStream();
        contextState.ordering().orderAfterQueuedWork();
        orderAfterForeignWork(copy, first);
        if (second != null) {
            orderAfterForeignWork(copy, second);
        }
        return copy;
    }

    /** Waits for everything queued on the synchronous stream (a forced synchronization). */
    public void synchronize(StreamState copy) {
        contextState.stats().forcedSynchronizations.increment();
        // The context's synchronous stream, open while the context is.
        contextState.calls().streams().synchronize(copy.handle());
    }

    private void orderAfterForeignWork(StreamState copy, NativeResource resource) {
        if (resource.context() != contextState) {
            resource.context().ordering().orderAfterAllWork(copy);
        }
        resource.orderAfterForeignUses(copy);
    }

    /**
     * A heap upload that fits one block, from a segment or (when {@code array} is not null) from
     * {@code n / element.byteSize()} elements of an array: no pipeline, so no lambdas, no block
     * event and no event calls; the copy, one stream synchronize, and nothing allocated on a
     * warmed pool (the small synchronous writes of an inference loop take this path).
     */
    private void uploadThroughOneBlock(StreamState copy, long address, MemorySegment source, Object array,
            ValueLayout element, long n) {
        StagingPool.Block block = staging.acquire();
        boolean completed = false;
        try {
            if (array != null) {
                MemorySegment.copy(array, 0, block.host, element, 0, (int) (n / element.byteSize()));
            } else {
                MemorySegment.copy(source, 0, block.host, 0, n);
            }
            // The block is pinned and owned by the pool; the device range is checked.
            contextState.calls().memory().copyToDevice(address, block.host, n, copy.handle());
            synchronize(copy);
            completed = true;
        } finally {
            giveBack(block, completed, copy);
        }
    }

    /** A heap download that fits one block, into a segment or an array, as {@link #uploadThroughOneBlock}. */
    private void downloadThroughOneBlock(StreamState copy, long address, MemorySegment destination, Object array,
            ValueLayout element, long n) {
        StagingPool.Block block = staging.acquire();
        boolean completed = false;
        try {
            // The block is pinned and owned by the pool; the device range is checked.
            contextState.calls().memory().copyToHost(block.host, address, n, copy.handle());
            synchronize(copy);
            completed = true;
            if (array != null) {
                MemorySegment.copy(block.host, element, 0, array, 0, (int) (n / element.byteSize()));
            } else {
                MemorySegment.copy(block.host, 0, destination, 0, n);
            }
        } finally {
            giveBack(block, completed, copy);
        }
    }

    /** Returns a block to the pool, or, when its copy may still be in flight, only after the synchronous stream's fence. */
    private void giveBack(StagingPool.Block block, boolean completed, StreamState copy) {
        if (completed) {
            staging.giveBack(block);
        } else {
            staging.giveBackAfter(block, copy);
        }
    }

    /** One chunk of a pipelined copy: queues its device side, or throws. */
    @FunctionalInterface
    private interface Chunk {
        void run(StagingPool.Block block, long offset, long length);
    }

    /** The host side of a chunk after the device side completed (downloads copy out of the block). */
    @FunctionalInterface
    private interface Drain {
        void run(StagingPool.Block block, long offset, long length);
    }

    /**
     * Moves {@code n} bytes in block-sized chunks through two blocks, so that the host works on
     * one while the device works on the other. {@code submit} queues a chunk's device side;
     * {@code drain}, when not null, runs after that chunk completed (for downloads).
     */
    private void pipeline(StreamState copy, long n, Chunk submit, Drain drain) {
        long blockBytes = StagingPool.BLOCK_BYTES;
        long chunks = (n + blockBytes - 1) / blockBytes;
        StagingPool.Block[] blocks = {staging.acquire(), chunks > 1 ? staging.acquire() : null};
        boolean completed = false;
        try {
            long issued = 0;
            for (long i = 0; i < chunks; i++) {
                // Keep up to two chunks in flight: issue ahead, then finish chunk i.
                while (issued < chunks && issued <= i + 1) {
                    StagingPool.Block b = blocks[(int) (issued & 1)];
                    if (issued >= 2) {
                        staging.await(b);
                    }
                    long offset = issued * blockBytes;
                    submit.run(b, offset, Math.min(blockBytes, n - offset));
                    staging.record(b, copy);
                    issued++;
                }
                if (drain != null) {
                    StagingPool.Block b = blocks[(int) (i & 1)];
                    staging.await(b);
                    long offset = i * blockBytes;
                    drain.run(b, offset, Math.min(blockBytes, n - offset));
                }
            }
            synchronize(copy);
            completed = true;
        } finally {
            for (StagingPool.Block b : blocks) {
                if (b != null) {
                    giveBack(b, completed, copy); // a chunk may still be in flight when not completed
                }
            }
        }
    }
}
