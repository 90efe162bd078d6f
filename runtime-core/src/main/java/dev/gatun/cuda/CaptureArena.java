package dev.gatun.cuda;

import dev.gatun.cuda.internal.graph.CaptureSession;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import java.util.Collection;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * One region of device memory, reserved ahead of time, that captured graphs take their scratch
 * memory from instead of memory nodes (PyTorch's {@code graph_pool_handle}, with addresses that
 * stay put). Inside a capture begun with {@link #beginCapture}, {@link Stream#allocate} takes the
 * next 256-byte aligned range of the arena: the graph gets no allocation or free node, and its
 * executables update in place like any other.
 *
 * <ul>
 *   <li><b>Measure.</b> {@link #probe} runs the work in a measuring capture, which is aborted,
 *       and returns the peak bytes a capture of it takes from the arena; nothing runs and nothing
 *       is mapped, so the rest of the device can be planned (a KV cache, say) before committing.
 *   <li><b>Reserve.</b> The arena is a {@link GrowableBuffer}: it reserves an address range once
 *       and {@link #ensure} maps physical chunks into it ({@code cuMemCreate}, {@code cuMemMap}),
 *       so it grows without its base address, or any graph's addresses, moving.
 *   <li><b>Stable addresses.</b> Each capture starts at the arena's base and only moves up: a
 *       free inside the capture gives nothing back (streams that joined the capture may still use
 *       the range in the graph's order, which the arena cannot see), and everything comes back
 *       when the capture is over. Two captures that allocate the same sizes in the same order
 *       get the same addresses.
 *   <li><b>Sharing.</b> Graphs captured into one arena overlap, so they must never run at the
 *       same time. Gatun enforces it by ordering, not refusal: a replay of any graph of the arena
 *       waits (in stream order, on the device) for the replays of the arena's graphs queued
 *       before it on other streams. Replays on one stream are in order already and pay nothing.
 *       Buffers left open at a capture's end keep their addresses: read a graph's outputs before
 *       replaying another graph of the arena, which overwrites them.
 *   <li><b>Overflow.</b> An allocation past {@link #byteSize()} (a probe's: past the reservation)
 *       throws a {@link CaptureArenaOverflowException} that reports the bytes needed, usable and
 *       reserved, and the device's free memory; the capture stays open, to abort.
 * </ul>
 *
 * <pre>{@code
 * try (CaptureArena arena = CaptureArena.reserve(context, 1L << 30)) {
 *     arena.ensure(arena.probe(stream, CaptureMode.THREAD_LOCAL, s -> forward(s, batch)));
 *     Graph graph;
 *     try (StreamCapture capture = arena.beginCapture(stream, CaptureMode.THREAD_LOCAL)) {
 *         forward(stream, batch);          // Stream.allocate comes from the arena
 *         graph = capture.end();           // no memory nodes
 *     }
 * }
 * }</pre>
 *
 * <p>Closing the arena closes its growable buffer: the memory is unmapped and the range freed
 * once every graph and executable that holds one of its allocations is gone and their work has
 * completed. Thread-safe.
 */
public final class CaptureArena implements AutoCloseable {

    private final CudaContext context;
    private final GrowableBuffer memory;
    private final ArenaSpace space;

    private CaptureArena(CudaContext context, GrowableBuffer memory) {
        this.context = context;
        this.memory = memory;
        this.space = new ArenaSpace(context.state(), memory.reservation());
    }

    /**
     * Reserves an arena of up to {@code maxBytes} (rounded up to whole chunks) on
     * {@code context}'s device; nothing is mapped until {@link #ensure}.
     *
     * @param context the context whose captures use it
     * @param maxBytes the most it may ever map
     * @return the arena, to close when its graphs are done
     * @throws CudaException when the device has no virtual memory management, or refuses the range
     */
    public static CaptureArena reserve(CudaContext context, long maxBytes) {
        return reserve(context, GrowableBufferOptions.exactly(maxBytes));
    }

    /**
     * Reserves an arena as {@link CudaContext#reserveGrowable(GrowableBufferOptions)} reserves a
     * growable buffer; nothing is mapped until {@link #ensure}.
     *
     * @param context the context whose captures use it
     * @param options the range to reserve and the chunk size
     * @return the arena, to close when its graphs are done
     */
    public static CaptureArena reserve(CudaContext context, GrowableBufferOptions options) {
        return new CaptureArena(context, context.reserveGrowable(options));
    }

    /** {@return the context this arena belongs to} */
    public CudaContext context() {
        return context;
    }

    /**
     * Measures {@code work}: runs it in a capture on {@code stream} in which every
     * {@link Stream#allocate} is counted as a capture into this arena would take it (and made an
     * allocation node of the driver's, so the recorded copies and kernels name valid addresses),
     * aborts the capture (nothing runs, nothing is mapped or allocated), and returns the peak
     * bytes, aligned as the arena aligns. A capture of the same work fits once {@link #ensure}
     * let captures take that much. Inside the probe, use its allocations only in work queued on the stream.
     *
     * @param stream the stream to capture on
     * @param mode the capture mode
     * @param work queues the work on the stream it is given
     * @return the bytes a capture of {@code work} needs from this arena
     * @throws CaptureArenaOverflowException when the work needs more than the arena reserved
     */
    public long probe(Stream stream, CaptureMode mode, Consumer<? super Stream> work) {
        Objects.requireNonNull(work, "work");
        try (StreamCapture capture = begin(stream, mode, null, true)) {
            work.accept(stream);
            return capture.arenaPeakBytes();
        } // closing aborts it: what it recorded is dropped, its blocks closed
    }

    /**
     * Lets captures take at least {@code bytes} of the arena ({@link #byteSize()}), mapping the
     * whole chunks they need; does nothing when captures may take that much already.
     * Synchronizing, as {@link GrowableBuffer#grow}: call it outside captures.
     *
     * @param bytes the bytes captures may take
     * @throws ReservationExceededException when {@code bytes} exceeds {@link #reservedBytes()}
     * @throws OutOfDeviceMemoryException when the device cannot back them; nothing changed
     */
    public void ensure(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot map a negative size: " + bytes);
        }
        if (bytes > space.usableBytes()) {
            memory.grow(bytes);
            space.grown(bytes);
        }
    }

    /**
     * Begins a capture on {@code stream} whose {@link Stream#allocate} calls take this arena's
     * memory; otherwise as {@link Stream#beginCapture(CaptureMode)}.
     *
     * @param stream a stream of this arena's context
     * @param mode the capture mode
     * @return the capture, to end or abort
     */
    public StreamCapture beginCapture(Stream stream, CaptureMode mode) {
        return begin(stream, mode, null, false);
    }

    /**
     * As {@link #beginCapture(Stream, CaptureMode)}, for a capture that may use only the device
     * buffers in {@code only} and those it allocates (see {@link Stream#beginCapture(CaptureMode, Collection)}).
     *
     * @param stream a stream of this arena's context
     * @param mode the capture mode
     * @param only the device buffers the captured work may use
     * @return the capture, to end or abort
     */
    public StreamCapture beginCapture(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only) {
        return begin(stream, mode, Objects.requireNonNull(only, "only"), false);
    }

    private StreamCapture begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only,
            boolean measuring) {
        context.checkSame(stream.context(), "the stream");
        checkOpen();
        return StreamCapture.begin(stream, mode, only,
                new CaptureSession.ArenaUse(space, space.open(measuring), toString()));
    }

    /** {@return the first byte of the arena; every capture's first allocation starts here} */
    public long baseAddress() {
        return memory.baseAddress();
    }

    /**
     * {@return the bytes captures may take from the arena now: the most {@link #ensure} asked for, which
     * an allocation past it is refused against} The memory mapped for them is whole chunks, so
     * {@link CaptureArenaCounters#mappedBytes()} may be more.
     */
    public long byteSize() {
        return space.usableBytes();
    }

    /** {@return the address range reserved: the most {@link #ensure} can map} */
    public long reservedBytes() {
        return memory.reservedBytes();
    }

    /** {@return the arena's memory figures and counts; readable after close} */
    public CaptureArenaCounters counters() {
        GrowableBufferCounters g = memory.counters();
        long[] f = space.figures();
        return new CaptureArenaCounters(g.reservedBytes(), g.mappedBytes(), g.chunkBytes(), f[0], f[1], f[2], f[3],
                f[4]);
    }

    /** {@return whether the arena is closed} */
    public boolean isClosed() {
        return memory.isClosed();
    }

    /**
     * Closes the arena: no capture can use it any more; its memory is released once every graph
     * and executable holding one of its allocations is gone. Idempotent.
     */
    @Override
    public void close() {
        memory.close();
    }

    private void checkOpen() {
        if (memory.isClosed()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public String toString() {
        return "CaptureArena over " + memory;
    }
}
