package dev.gatun.cuda.internal.driver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native block the checked layer writes a call's out-parameters into and reads them back from
 * before the call returns. Each thread has one for every call ({@link Checked}); an owner whose
 * hot call always runs under its own lock may hold one of its own instead, so that the call
 * skips the thread-local lookup: a stream's, for its stream-ordered allocations (made under the
 * stream's lock). Its holder makes sure no two calls use it at once.
 *
 * <p>{@code owner} is the block as {@code Arena.ofAuto} made it: the arena frees it once this
 * object is unreachable. {@code view} is the same memory as a segment of the global scope, which
 * is what the calls pass: a downcall acquires and releases the session of each segment argument
 * that is not global (two atomic updates of a shared or automatic session, around every call;
 * issue 36 found {@code MemorySessionImpl.checkValidStateRaw} at 8 % of the Java samples of the
 * stream-ordered allocation row). Safety: the view is used only through this object, which keeps
 * {@code owner} strongly reachable, so the memory outlives every use of the view.
 */
public final class OutBlock {

    @SuppressWarnings("unused") // holds the automatic arena's block alive while the view is used
    private final MemorySegment owner;
    final MemorySegment view;

    /** A block of {@code bytes}, 8-aligned. */
    public OutBlock(int bytes) {
        owner = Arena.ofAuto().allocate(bytes, 8);
        view = MemorySegment.ofAddress(owner.address()).reinterpret(bytes);
    }
}
