package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.CaptureArenaOverflowException;
import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.memory.ArenaBlock;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import dev.gatun.cuda.internal.memory.DeviceMemory;
import dev.gatun.cuda.internal.memory.GraphAllocation;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The memory one capture allocates on its stream ({@code Stream.allocate} while it is open):
 * allocation nodes of the captured graph ({@link GraphAllocations}), or the next ranges of a
 * capture arena at the capture's cursor (a probe's are allocation nodes, counted in its cursor),
 * each with the handle that claimed it. Used under the capturing stream's lock, which the
 * capture's end takes too; at the end they become the graph's, or are discarded (never backed)
 * and closed.
 */
final class CaptureMemory {

    private static final Logger LOG = LoggerFactory.getLogger(CaptureMemory.class);

    private final ContextState context;
    private final StreamState stream;
    /** The allocation nodes made in the capture, and their states. */
    private final GraphAllocations allocations;
    /** Their memory, which the captured work may use whatever the capture's buffer list says. */
    private final Set<NativeResource> allocatedHere = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Each allocation and the handle that claimed it, in order: held strongly, as the capture holds them. */
    private final List<Claimed> allocated = new ArrayList<>();
    /** The arena its allocations come from, or null for memory nodes. */
    private final CaptureSession.ArenaUse arena;

    /** An allocation of this capture and the handle (the public buffer) that claimed it. */
    private record Claimed(DeviceMemory memory, Object handle) {
    }

    CaptureMemory(StreamState stream, CaptureScope capture, CaptureSession.ArenaUse arena) {
        this.context = stream.context();
        this.stream = stream;
        this.allocations = new GraphAllocations(stream, capture);
        this.arena = arena;
    }

    GraphAllocations allocations() {
        return allocations;
    }

    /** {@return whether the captured work may use {@code resource} because this capture allocated it} */
    boolean madeHere(NativeResource resource) {
        return allocatedHere.contains(resource);
    }

    /**
     * Why a conditional node or handle may not join this capture (it takes from an arena, or
     * allocated already), or null when it may.
     */
    String refusalOfConditionals() {
        if (arena != null) {
            return "takes its allocations from " + arena.name();
        }
        return allocated.isEmpty() ? null : "allocated on its stream";
    }

    /**
     * {@code bytes} (more than 0): an allocation node, or the next range of the arena.
     *
     * @throws CaptureArenaOverflowException when the arena cannot give them
     */
    DeviceMemory allocate(long bytes) {
        ArenaSpace.Cursor cursor = cursor();
        return cursor == null || cursor.measuring()
                ? GraphAllocation.allocate(context, stream, allocations, measured(bytes))
                : fromArena(bytes);
    }

    /** {@code handle} claimed {@code memory}, which {@link #allocate} just made: the capture holds it. */
    void claimed(DeviceMemory memory, Object handle) {
        allocatedHere.add(memory);
        allocated.add(new Claimed(memory, handle));
        memory.usedOn(stream); // the capture holds it, as everything its work uses
    }

    /**
     * {@code bytes}, counted in a probe's arena cursor when this capture is one: its allocations
     * are the driver's allocation nodes, valid addresses the driver's copy and memset nodes
     * accept, which no launch ever backs, since a probe is aborted.
     */
    private long measured(long bytes) {
        ArenaSpace.Cursor cursor = cursor();
        if (cursor != null && !cursor.measure(bytes)) {
            throw overflow(bytes);
        }
        return bytes;
    }

    /** The next {@code bytes} of the arena, or the report of why they do not fit. */
    private ArenaBlock fromArena(long bytes) {
        ArenaBlock block = arena.cursor().allocate(bytes);
        if (block == null) {
            throw overflow(bytes);
        }
        return block;
    }

    /** The report of an arena allocation of {@code bytes} that did not fit. */
    private CaptureArenaOverflowException overflow(long bytes) {
        long free;
        try {
            context.checkOpen();
            free = context.calls().memory().info().freeBytes();
        } catch (RuntimeException e) {
            LOG.debug("Reading the device's free memory for an arena overflow report failed: {}", e.toString());
            free = -1;
        }
        return new CaptureArenaOverflowException(arena.name(), arena.cursor().neededFor(bytes),
                arena.space().usableBytes(), arena.space().reservation().reservedBytes(), free);
    }

    /** {@return the bytes this capture has taken from its arena so far: its peak} */
    long arenaPeakBytes() {
        synchronized (stream.lock()) {
            return arena.cursor().peakBytes();
        }
    }

    private ArenaSpace.Cursor cursor() {
        return arena == null ? null : arena.cursor();
    }

    /** The capture is over: its arena range comes back for the next capture (under the stream's lock). */
    private void closeCursor() {
        if (arena != null) {
            arena.cursor().close();
        }
    }

    /** The capture is over without a graph: its allocations were never backed, and no free may name them. */
    void discard() {
        synchronized (stream.lock()) {
            closeCursor();
            allocations.discarded();
        }
    }

    /**
     * Closes the buffers allocated in a capture that made no graph (after {@link #discard()}):
     * their addresses never held memory, so they are retired without a free, and using them fails
     * as for any closed buffer.
     */
    void closeDiscarded() {
        List<Claimed> made;
        synchronized (stream.lock()) {
            made = List.copyOf(allocated);
        }
        for (Claimed c : made) {
            c.memory().closeBy(c.handle());
        }
    }

    /**
     * The capture ended with a graph: its arena range comes back, its allocation nodes are the
     * graph's; returns the handles of the allocations still open, in allocation order.
     */
    List<Object> ended() {
        synchronized (stream.lock()) {
            closeCursor();
            allocations.ended();
            List<Object> open = new ArrayList<>(allocated.size());
            for (Claimed c : allocated) {
                if (c.memory().ownedBy(c.handle())) { // closed in the capture: a free node freed it
                    open.add(c.handle());
                }
            }
            return open;
        }
    }

    /** {@return the arena's space, for the graph's replays to be ordered by; null without an arena} */
    ArenaSpace arenaSpace() {
        return arena == null ? null : arena.space();
    }
}
