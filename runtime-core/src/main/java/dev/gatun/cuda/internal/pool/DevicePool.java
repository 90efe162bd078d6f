package dev.gatun.cuda.internal.pool;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.DevicePoolSite;
import dev.gatun.cuda.internal.context.DevicePoolTally;
import dev.gatun.cuda.internal.events.PoolMissEvent;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One context's pool of device memory: freed blocks are kept in per-{@linkplain SizeClasses size
 * class} free lists, up to a bound on the bytes held, and handed to the next request of their
 * class without a driver call. A driver allocation or free may synchronize the device (and so
 * break another thread's graph capture); a pool hit makes no driver call at all.
 *
 * <p><b>Contract with retirement.</b> {@link #release} hands a block straight to the next
 * {@link #acquire} of its class, with no fence of its own. It must therefore only be called by
 * the context's retirement queue, once the completion evidence of the block's last use on every
 * stream that used it is complete; the pool never frees or reuses a block before that. Every
 * address {@link #acquire} returned is released exactly once, with the byte count it was
 * acquired with. A release that returns a nonzero CUresult has not taken the block (the driver
 * refused to free it) and may be retried.
 *
 * <p><b>Sizes.</b> A request is served from the smallest class that holds it. Requests whose
 * class exceeds {@link SizeClasses#LARGEST} or the bound bypass the pool: they are allocated at
 * their exact size and freed on release. With a bound of 0 every request bypasses it. A request
 * of 0 bytes needs no memory: {@code acquire(0)} returns 0 (the null device pointer) and touches
 * nothing, and {@code release(0, 0)} does nothing.
 *
 * <p><b>Out of memory.</b> A failed allocation reaches the caller: the context's out-of-memory
 * ladder ({@code internal.memory.OutOfMemoryLadder}) trims this pool, among other things, and
 * asks again.
 *
 * <p><b>Caps.</b> The bytes the pool holds from the driver (handed out or retained) count against
 * its {@linkplain PoolCaps hard cap}: a miss that would pass it is refused with
 * {@code CUDA_ERROR_OUT_OF_MEMORY} before the driver is asked. Above its soft limit, an idle pool
 * (no acquisition since the previous check) frees retained blocks, largest first, down to the
 * limit: checked when retirement gives a block back ({@link #release}) and at the context's safe
 * points ({@link #trimIfIdle}).
 *
 * <p><b>Cost.</b> Thread-safe. A warmed hit takes one uncontended monitor and bumps counters;
 * it allocates nothing. Call-site profiling, when off, costs one volatile read. The caps cost
 * nothing on a hit; a miss and a driver free each update the pool's footprint.
 */
public final class DevicePool implements DevicePoolTally {

    private static final Logger LOG = LoggerFactory.getLogger(DevicePool.class);

    private final PoolBackend backend;
    /**
     * Fixed for the pool's life: whether a request is pooled depends on it, and acquire and
     * release must decide alike, or a block allocated at its exact size could later be filed
     * under a larger class and handed out undersized.
     */
    private final long bound;
    /** The largest request served from a class; larger ones bypass the pool (0 when pooling is off). */
    private final long largestPooledRequest;
    private final FreeList[] freeLists;
    private final SiteProfile profile;
    private volatile boolean profiling;

    /** Raised before a block is pushed and lowered after it is popped: never above the bound. */
    private final AtomicLong retainedBytes = new AtomicLong();
    private final LongAdder retainedBlocks = new LongAdder();
    private final LongAdder hits = new LongAdder();
    /**
     * Misses whose allocation failed (refused by the hard cap, or by the driver). Every miss
     * allocates or fails, so the misses are {@code allocations + failedMisses}: a miss is counted
     * once, as it ends, not once as it begins and again as it allocates (with the pool off every
     * acquisition is a miss, and this saves one adder update on each).
     */
    private final LongAdder failedMisses = new LongAdder();
    private final LongAdder allocations = new LongAdder();
    private final LongAdder frees = new LongAdder();
    private final LongAdder trims = new LongAdder();
    /** The hard cap and soft limit; its footprint is the bytes held from the driver. */
    private final PoolCaps caps;

    public DevicePool(PoolBackend backend, DevicePoolOptions options) {
        this(backend, options, new SiteProfile(new CallSites()));
    }

    DevicePool(PoolBackend backend, DevicePoolOptions options, SiteProfile profile) {
        this.backend = Objects.requireNonNull(backend, "backend");
        this.bound = options.maxRetainedBytes();
        this.largestPooledRequest = SizeClasses.floorClass(bound);
        this.freeLists = new FreeList[largestPooledRequest == 0 ? 0 : SizeClasses.index(largestPooledRequest) + 1];
        for (int i = 0; i < freeLists.length; i++) {
            freeLists[i] = new FreeList(SizeClasses.classAt(i));
        }
        this.profile = profile;
        this.profiling = options.profileCallSites();
        this.caps = new PoolCaps(options.hardCapBytes(), options.softLimitBytes());
    }

    /**
     * A device block of at least {@code bytes}: from the free list of its class, or allocated
     * through the backend.
     *
     * @return the block's address; 0 for a request of 0 bytes
     * @throws IllegalArgumentException when {@code bytes} is negative
     * @throws CudaException when the backend cannot allocate, or {@code CUDA_ERROR_OUT_OF_MEMORY}
     *     when a miss would pass the hard cap
     */
    public long acquire(long bytes) {
        if (bytes <= 0) {
            if (bytes == 0) {
                return 0;
            }
            throw new IllegalArgumentException("cannot acquire a negative size: " + bytes + " bytes");
        }
        boolean pooled = bytes <= largestPooledRequest;
        long size = pooled ? SizeClasses.classBytes(bytes) : bytes;
        long address = pooled ? take(freeLists[SizeClasses.index(size)]) : 0;
        boolean hit = address != 0;
        if (hit) {
            hits.increment();
        }
        if (profiling) {
            profile.record(bytes, hit);
        }
        if (hit) {
            return address;
        }
        PoolMissEvent event = PoolMissEvent.start();
        long range = AutomaticRanges.ON ? AutomaticRanges.start(AutomaticRanges.POOL_MISS, size) : 0;
        try {
            address = allocate(size);
        } finally {
            if (AutomaticRanges.ON) {
                AutomaticRanges.end(range);
            }
        }
        if (event != null) {
            event.requested = bytes;
            event.allocated = size;
            event.pooledSize = pooled;
            event.commit();
        }
        return address;
    }

    /**
     * Gives back a block from {@link #acquire}: kept for reuse if the bound leaves room for it,
     * else freed through the backend. Called only by retirement, once the block's completion
     * evidence is complete (see the class comment).
     *
     * @param bytes the byte count the block was acquired with
     * @return 0 when the block was kept or freed; else the backend's CUresult, and the block is
     *     still the caller's to retry
     * @throws IllegalArgumentException for a size or address no acquire could have produced
     */
    public int release(long address, long bytes) {
        if (bytes <= 0 || address == 0) {
            if (bytes == 0 && address == 0) {
                return 0;
            }
            throw new IllegalArgumentException("release(0x" + Long.toHexString(address) + ", " + bytes + " bytes) "
                    + "is not a block this pool handed out; release exactly the address acquire returned, "
                    + "with the byte count it was asked for");
        }
        int r = keep(address, bytes) ? 0
                : free(address, bytes <= largestPooledRequest ? SizeClasses.classBytes(bytes) : bytes);
        if (r == 0 && caps.softLimited()) {
            trimIfIdle(); // a release comes from retirement, inside the gate
        }
        return r;
    }

    /**
     * Keeps a block from {@link #acquire} for reuse, without a driver call, when its class is
     * pooled and the bound leaves room for it; false (and nothing done) when it would have to be
     * freed, which {@link #release} does. Called, as release is, only once the block's completion
     * evidence is complete (a block no stream ever used needs none).
     */
    public boolean keep(long address, long bytes) {
        if (bytes <= 0 || bytes > largestPooledRequest) {
            return false;
        }
        long classBytes = SizeClasses.classBytes(bytes);
        if (!reserve(classBytes)) {
            return false;
        }
        retainedBlocks.increment();
        freeLists[SizeClasses.index(classBytes)].push(address);
        return true;
    }

    /**
     * Frees every retained block through the backend. A block the driver refuses to free is
     * logged and dropped, never handed out again. If the backend throws instead (it could not
     * even try, e.g. the capture gate stayed closed), the block goes back to its free list and
     * the exception propagates.
     *
     * @return 0, or the first CUresult a free failed with
     */
    public int trim() {
        trims.increment();
        return freeRetained(Long.MIN_VALUE);
    }

    /**
     * At a safe point (inside a synchronizing section): when the pool
     * holds more than its soft limit from the driver and was idle since the previous check, frees
     * retained blocks, largest first, until it holds no more than the limit or retains nothing.
     *
     * @return the bytes freed
     */
    public long trimIfIdle() {
        if (!caps.softLimited() || !caps.overSoftLimit() || !caps.idle(hits.sum() + misses())) {
            return 0;
        }
        long before = caps.footprint();
        freeRetained(caps.softLimit());
        long freed = before - caps.footprint();
        if (freed > 0) {
            caps.countSoftTrim("the device pool", freed);
        }
        return freed;
    }

    /**
     * Frees retained blocks through the backend, largest class first, while the pool holds more
     * than {@code goal} bytes from the driver. A block the driver refuses to free is logged and
     * dropped, never handed out again. If the backend throws instead (it could not even try, e.g.
     * the capture gate stayed closed), the block goes back to its free list and the exception
     * propagates.
     *
     * @return 0, or the first CUresult a free failed with
     */
    private int freeRetained(long goal) {
        int firstFailure = 0;
        for (int i = freeLists.length - 1; i >= 0; i--) {
            FreeList list = freeLists[i];
            for (long address; caps.footprint() > goal && (address = take(list)) != 0;) {
                int r;
                try {
                    r = free(address, list.classBytes);
                } catch (RuntimeException e) {
                    putBack(list, address);
                    throw e;
                }
                if (r != 0) {
                    LOG.error("Leaking a pooled device block of {} bytes at 0x{}: the driver refused to free it "
                            + "with CUresult {}", list.classBytes, Long.toHexString(address), r);
                    firstFailure = firstFailure == 0 ? r : firstFailure;
                }
            }
        }
        return firstFailure;
    }

    /** Bytes the pool holds from the driver now: handed out, or retained. */
    public long footprint() {
        return caps.footprint();
    }

    /** Its hard cap and soft limit. */
    public PoolCaps caps() {
        return caps;
    }

    @Override
    public long driverAllocations() {
        return allocations.sum();
    }

    @Override
    public long driverFrees() {
        return frees.sum();
    }

    @Override
    public long driverBytes() {
        return caps.footprint();
    }

    @Override
    public long retainedBytes() {
        return retainedBytes.get();
    }

    /**
     * A snapshot of the counters, racing acquisitions and frees: the frees are read before the
     * allocations (a free is counted after its allocation, so a snapshot never shows more frees
     * than allocations), and the misses are the allocations read plus the failed ones (never fewer
     * than the allocations). A miss still in progress is in neither.
     */
    public DevicePoolCounters counters() {
        long freed = frees.sum();
        long allocated = allocations.sum();
        return new DevicePoolCounters(hits.sum(), allocated + failedMisses.sum(), retainedBytes.get(),
                retainedBlocks.sum(), allocated, freed, trims.sum(), caps.refusals(), caps.softTrims());
    }

    /** Misses that ended: each allocated, or failed. */
    private long misses() {
        return allocations.sum() + failedMisses.sum();
    }

    /** Switches call-site profiling; sites recorded so far are kept. */
    public void setProfiling(boolean on) {
        profiling = on;
    }

    public boolean isProfiling() {
        return profiling;
    }

    /** Acquisitions per call site recorded while profiling was on, the most bytes requested first. */
    public List<DevicePoolSite> sites() {
        return profile.snapshot();
    }

    /** Pops a block of {@code list}'s class and stops counting it as retained; 0 when there is none. */
    private long take(FreeList list) {
        long address = list.pop();
        if (address != 0) {
            retainedBlocks.decrement();
            retainedBytes.addAndGet(-list.classBytes);
        }
        return address;
    }

    /** Returns a block that trim took but could not free; it is still allocated and unused. */
    private void putBack(FreeList list, long address) {
        if (reserve(list.classBytes)) {
            retainedBlocks.increment();
            list.push(address);
        } else {
            LOG.error("Leaking a pooled device block of {} bytes at 0x{}: freeing it failed and other releases "
                    + "refilled the pool meanwhile", list.classBytes, Long.toHexString(address));
        }
    }

    /** Claims room under the bound before the block becomes visible, so two releases cannot both take the last of it. */
    private boolean reserve(long classBytes) {
        long held;
        do {
            held = retainedBytes.get();
            if (held > bound - classBytes) {
                return false;
            }
        } while (!retainedBytes.compareAndSet(held, held + classBytes));
        return true;
    }

    private long allocate(long size) {
        if (!caps.tryClaim(size)) {
            failedMisses.increment();
            throw caps.refusal("the device pool", size, -1);
        }
        long address;
        try {
            address = backend.allocate(size);
        } catch (RuntimeException | Error e) {
            caps.unclaim(size);
            failedMisses.increment();
            throw e;
        }
        if (address == 0) {
            caps.unclaim(size);
            failedMisses.increment();
            throw new IllegalStateException("the pool's backend returned the null address for " + size + " bytes");
        }
        allocations.increment();
        return address;
    }

    private int free(long address, long size) {
        int r = backend.free(address, size);
        if (r == 0) {
            frees.increment();
            caps.unclaim(size);
        }
        return r;
    }
}
