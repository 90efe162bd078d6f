package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ForeignHandles;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.context.SwitchPoint;
import java.lang.invoke.MethodHandles;
import java.lang.ref.WeakReference;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The memory behind a {@code DeviceBuffer}: a device range, and how it is released. Each kind
 * of memory is one subclass, chosen where the memory is allocated, and each fixes its release
 * there: the buffer never asks what it is (the shape of the JDK's segment factories, and of
 * cuda.core's memory resources, whose deleter is captured at creation).
 *
 * <p><b>Ownership.</b> A buffer (the public handle, one reference to this memory, so that an
 * allocation makes nothing larger than it) stands for this memory from {@link #claimBy} until
 * {@link #closeBy}, and every use checks {@link #checkOwnedBy}. The kinds on the allocation hot
 * paths are {@linkplain Recycler recycled}: once freed, the same object stands for the next
 * allocation of its kind, with a new handle, so a stale handle (closed, or never the owner) fails
 * every check and its close does nothing.
 *
 * <p><b>Leaks.</b> With leak tracking ({@code ContextOptions.leakTracking}) every handle another
 * owner does not close is watched by the Cleaner and listed with its allocation site, and
 * nothing is recycled. Without it, cold
 * kinds are watched as every owner is, and recycled kinds one allocation in
 * {@link #LEAK_SAMPLING} (sampled, as Netty's leak detector does): a leaked handle is reported at that
 * rate and its memory freed when it is; an unwatched leaked handle keeps its memory until the
 * process ends, and its context refuses to close while it is counted live. A watched handle is
 * named here through a weak reference, so that this memory, which the Cleaner's action reaches,
 * never keeps its handle reachable.
 */
public abstract sealed class DeviceMemory extends NativeResource
        permits PooledBlock, StreamOrdered, GraphAllocation, Borrowed, ImportedMemory, GrowableView, ArenaBlock, EmptyMemory {

    /** One recycled allocation in this many is watched by the Cleaner when leaks are not tracked. */
    public static final int LEAK_SAMPLING = 256;

    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(DeviceMemory.class, "owner", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e); // the field below exists: cannot happen
        }
    }

    /** How the Cleaner watches the handles of a kind. */
    enum Watch {
        /** Every handle (the cold kinds). */
        ALWAYS,
        /** One handle in {@link #LEAK_SAMPLING}, every one with leak tracking (the recycled kinds). */
        SAMPLED,
        /** None: another owner closes this memory (a growable buffer's views). */
        NEVER
    }

    /** The range: set at allocation, and again when a recycled object stands for a new one (before its handle's claim publishes it). */
    long address;
    long size;
    /**
     * What names the handle that stands for this memory now: the handle itself, or, when the
     * Cleaner watches it, a weak reference to it; null once closed (and before the first claim).
     */
    private volatile Object owner;

    DeviceMemory(ContextState context, long address, long size, StreamState origin) {
        super(context, OwnerKind.DEVICE_BUFFER, origin);
        this.address = address;
        this.size = size;
    }

    /** How this kind's handles are watched; see {@link Watch}. Every one, unless the kind says otherwise. */
    Watch watch() {
        return Watch.ALWAYS;
    }

    public final long address() {
        return address;
    }

    public final long size() {
        return size;
    }

    /**
     * Makes {@code handle} stand for this memory, once per allocation, and has the Cleaner watch it
     * as the kind and the context's leak settings say. The release store publishes the range (and
     * a recycled object's reset state) to every thread that reads the owner; no fence is needed,
     * since nothing here must be ordered before a later read.
     */
    public final void claimBy(Object handle) {
        Watch how = watch();
        if (how == Watch.SAMPLED && context.leakTracking()) {
            how = Watch.ALWAYS;
        }
        if (how == Watch.ALWAYS || how == Watch.SAMPLED && ThreadLocalRandom.current().nextInt(LEAK_SAMPLING) == 0) {
            LeakWatch token = new LeakWatch(handle, this);
            OWNER.setRelease(this, token);
            watch(handle, token);
        } else {
            OWNER.setRelease(this, handle);
            if (how == Watch.NEVER) {
                listWithoutCleaner();
            }
        }
    }

    /** Whether {@code handle} stands for this memory now (it claimed it and did not close it). */
    public final boolean ownedBy(Object handle) {
        SwitchPoint.OWNER_READ.reach();
        Object o = owner;
        return o == handle || o instanceof WeakReference<?> w && w.get() == handle;
    }

    /** Throws {@link IllegalStateException} unless {@code handle} stands for this memory now. */
    public final void checkOwnedBy(Object handle) {
        if (!ownedBy(handle)) {
            throw new IllegalStateException(closedIdentity() + " is closed");
        }
    }

    /**
     * Records that work using this memory through {@code handle} is being queued on
     * {@code stream}, as {@link #usedOn}, and refuses it unless {@code handle} still stands for
     * this memory once the stream is listed. For the recycled kinds, whose closed flag a next
     * life sets back to false, the owner is the epoch a late use must compare: listed, then
     * checked, a use either sees its handle's close (and is refused, even when a later
     * allocation already stands for this object) or the close sees its stream (and fences it).
     * The range read before this call (a kernel's parameters baked at prepare, a synchronous
     * copy's address) is therefore still the handle's own when this returns.
     *
     * @throws IllegalStateException when {@code handle} no longer stands for this memory, or it
     *     is closed and not held
     */
    public final void usedBy(Object handle, StreamState stream) {
        list(stream);
        if (!ownedBy(handle) || closedForGood()) {
            throw new IllegalStateException(closedIdentity() + " is closed");
        }
    }

    /**
     * Names a closed handle of this memory: by the full identity while this memory is closed too
     * (it still describes the handle's allocation, with what closed it), by number alone once a
     * recycled object stands for a later allocation.
     */
    @Override
    public final String closedIdentity() {
        return isClosed() ? identity() : "DeviceBuffer#" + id();
    }

    /** Closes this memory for {@code handle}, once; nothing when {@code handle} does not stand for it. */
    public final void closeBy(Object handle) {
        SwitchPoint.OWNER_CLEAR.reach();
        Object o = owner;
        if ((o == handle || o instanceof WeakReference<?> w && w.get() == handle) && OWNER.compareAndSet(this, o, null)) {
            close();
        }
    }

    /** For memory another owner closed (a growable buffer's view): its handle no longer stands for it. */
    final void disown() {
        owner = null;
    }

    /**
     * Gives a freed recycled object back to its recycler (call once its memory is freed and it is
     * closed: from its free at close, or from its release in retirement); nothing for the other
     * kinds. The close may still be counting it closed on this thread: counts commute, and
     * nothing else of it is touched after.
     */
    void recycle() {
    }

    /**
     * For a recycled kind: stands for a new allocation of {@code bytes} at {@code address}, made in
     * {@code origin}'s order (null: none). Its owner's {@link #claimBy} publishes it.
     */
    final void reuse(long address, long bytes, StreamState origin) {
        this.address = address;
        this.size = bytes;
        reopen(origin);
    }

    /**
     * Frees once every fence of the memory's uses completed: in the synchronous stream's order
     * ({@code cuMemFreeAsync}: no synchronization, and the stream never captures), or, once the
     * context's own streams are gone (shutdown, after a device-wide synchronize, under the gate),
     * synchronously. Returns the CUresult.
     *
     * @param sync the context's synchronous stream, or null when it is closed
     */
    final int freeAfterFences(StreamState sync) {
        // Every stream that used the memory passed a fence recorded after its last use.
        return sync != null ? context.calls().memory().freeAsync(address, sync.handle())
                : context.calls().memory().free(address);
    }

    /** The context's synchronous stream while it takes work, else null (see {@link #freeAfterFences}). */
    final StreamState syncStreamIfOpen() {
        StreamState sync = context.syncStream();
        return sync.closed() ? null : sync;
    }

    /**
     * For an import, not yet handed out: refuses a claimed size past what the driver mapped
     * ({@link ForeignHandles#checkMappedSize}), closing this memory first, which unmaps or frees it
     * through the kind's own release (nothing used it, so retirement releases it at once).
     */
    final void checkMapped(String export) {
        try {
            ForeignHandles.checkMappedSize(context, address, size, export);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** "DeviceBuffer#id (size bytes at 0x..., device d" + the kind's words + ")". */
    final String describe(String words) {
        return "DeviceBuffer#" + id() + " (" + size + " bytes at 0x" + Long.toHexString(address) + ", device "
                + context.device() + (words.isEmpty() ? "" : ", " + words) + ")";
    }

    /**
     * A watched handle's token and the Cleaner's action in one object (one allocation per watched
     * handle besides the Cleaner's own): names the handle weakly, and once the handle is
     * unreachable, reports and closes the allocation it stood for, if it still does.
     */
    private static final class LeakWatch extends WeakReference<Object> implements Runnable {
        private final DeviceMemory memory;

        LeakWatch(Object handle, DeviceMemory memory) {
            super(handle);
            this.memory = memory;
        }

        @Override
        public void run() {
            if (OWNER.compareAndSet(memory, this, null)) {
                memory.reportLeak();
                memory.close();
            }
        }
    }
}
