package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.MemOpCalls;
import dev.gatun.cuda.internal.launch.MemOpParams;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * The stream memory operations of one {@link Stream} ({@link Stream#memOps()}): writing a 32/64-bit
 * word in stream order, and making the stream wait until a word meets a condition
 * ({@code cuStreamWriteValue32/64}, {@code cuStreamWaitValue32/64}, {@code cuStreamBatchMemOp}).
 * The word is a device word (a {@link DeviceView} of exactly 4 or 8 bytes, aligned to its size)
 * or a {@link MappedWord} that the host polls or sets.
 *
 * <p>Each operation follows the stream protocol: under the stream's lock, it checks the stream is
 * open, records use of the word on the stream (so closing the word's owner waits for it, and an
 * open capture holds it), then queues the driver call. Inside a capture the driver records it as
 * a graph node (a memory-operation node) that each replay runs again. A single write or wait
 * allocates nothing and makes one driver call. Size, alignment, the device's support
 * ({@link Device#streamMemOpSupport()}) and the word's context are checked first; nothing
 * reaches the driver otherwise.
 *
 * <p><b>A wait blocks the stream, not the host.</b> Until its condition holds, no later work on
 * the stream runs, and anything that waits for that work waits too: {@link Stream#synchronize()},
 * and every synchronous copy of the context (they order themselves after all queued work). Make
 * sure the value is written (by another stream, a kernel, or the host through a
 * {@link MappedWord}) before such a call, or it never returns.
 */
public final class StreamMemOps {

    private final Stream stream;
    private final CudaContext context;
    private final MemOpCalls calls;

    StreamMemOps(Stream stream) {
        this.stream = stream;
        this.context = stream.context();
        this.calls = context.state().calls().memOps();
    }

    /**
     * Queues a write of {@code value} to a 4-byte device word.
     *
     * @param word a view of exactly 4 bytes, 4-byte aligned, of this stream's context
     * @param value the value written
     * @param flag the write's ordering ({@link WriteFlag#DEFAULT}: with a memory barrier)
     */
    public void write32(DeviceView word, int value, WriteFlag flag) {
        MemOp.checkWord(word, 4, "write32");
        int bits = flag.bits;
        queue(MemOp.WRITE32, word, null, value, bits);
    }

    /**
     * Queues a write of {@code value} to an 8-byte device word (devices with
     * {@link StreamMemOpSupport#values64()}).
     *
     * @param word a view of exactly 8 bytes, 8-byte aligned, of this stream's context
     * @param value the value written
     * @param flag the write's ordering
     */
    public void write64(DeviceView word, long value, WriteFlag flag) {
        MemOp.checkWord(word, 8, "write64");
        int bits = flag.bits;
        MemOp.checkSupported(context.device(), true, null, null);
        queue(MemOp.WRITE64, word, null, value, bits);
    }

    /**
     * Queues a write of {@code value} to a mapped word's low 32 bits: the host sees it with
     * {@link MappedWord#getInt()} (see the ordering stated there).
     *
     * @param word a mapped word of this stream's context
     * @param value the value written
     * @param flag the write's ordering ({@link WriteFlag#DEFAULT}: earlier writes are seen first)
     */
    public void write32(MappedWord word, int value, WriteFlag flag) {
        Objects.requireNonNull(word, "word");
        int bits = flag.bits;
        queue(MemOp.WRITE32, null, word, value, bits);
    }

    /**
     * Queues a write of {@code value} to a whole mapped word (devices with
     * {@link StreamMemOpSupport#values64()}).
     *
     * @param word a mapped word of this stream's context
     * @param value the value written
     * @param flag the write's ordering
     */
    public void write64(MappedWord word, long value, WriteFlag flag) {
        Objects.requireNonNull(word, "word");
        int bits = flag.bits;
        MemOp.checkSupported(context.device(), true, null, null);
        queue(MemOp.WRITE64, null, word, value, bits);
    }

    /**
     * Makes later work on this stream wait until a 4-byte device word meets {@code condition}
     * against {@code value}. Does not block the host (see the class comment).
     *
     * @param word a view of exactly 4 bytes, 4-byte aligned, of this stream's context
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     */
    public void wait32(DeviceView word, int value, WaitCondition condition, WaitFlag flag) {
        MemOp.checkWord(word, 4, "wait32");
        MemOp.checkSupported(context.device(), false, condition, flag);
        int bits = condition.bits | flag.bits;
        queue(MemOp.WAIT32, word, null, value, bits);
    }

    /**
     * Makes later work on this stream wait until an 8-byte device word meets {@code condition}
     * against {@code value} (devices with {@link StreamMemOpSupport#values64()}).
     *
     * @param word a view of exactly 8 bytes, 8-byte aligned, of this stream's context
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     */
    public void wait64(DeviceView word, long value, WaitCondition condition, WaitFlag flag) {
        MemOp.checkWord(word, 8, "wait64");
        MemOp.checkSupported(context.device(), true, condition, flag);
        int bits = condition.bits | flag.bits;
        queue(MemOp.WAIT64, word, null, value, bits);
    }

    /**
     * Makes later work on this stream wait until a mapped word's low 32 bits meet
     * {@code condition} against {@code value}: the host releases the stream with
     * {@link MappedWord#setInt}.
     *
     * @param word a mapped word of this stream's context
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     */
    public void wait32(MappedWord word, int value, WaitCondition condition, WaitFlag flag) {
        Objects.requireNonNull(word, "word");
        MemOp.checkSupported(context.device(), false, condition, flag);
        int bits = condition.bits | flag.bits;
        queue(MemOp.WAIT32, null, word, value, bits);
    }

    /**
     * Makes later work on this stream wait until a whole mapped word meets {@code condition}
     * against {@code value} (devices with {@link StreamMemOpSupport#values64()}).
     *
     * @param word a mapped word of this stream's context
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     */
    public void wait64(MappedWord word, long value, WaitCondition condition, WaitFlag flag) {
        Objects.requireNonNull(word, "word");
        MemOp.checkSupported(context.device(), true, condition, flag);
        int bits = condition.bits | flag.bits;
        queue(MemOp.WAIT64, null, word, value, bits);
    }

    /**
     * Queues {@code ops} in order as one batch ({@code cuStreamBatchMemOp}): one driver call for
     * all of them. Builds the driver's parameter array for the call (a cold path; single writes
     * and waits allocate nothing).
     *
     * @param ops 1 to {@value MemOp#MAX_BATCH} operations on words of this stream's context
     */
    public void batch(List<MemOp> ops) {
        List<MemOp> checked = MemOp.checkBatch(ops, context);
        StreamState s = stream.openState();
        try (Arena arena = Arena.ofConfined()) {
            synchronized (s.lock()) {
                s.checkOpen();
                refuseInBody(s);
                for (MemOp op : checked) {
                    op.useOn(context, s);
                }
                // Every word is aligned, inside an open allocation of this context that now lists
                // this stream; the array is read during the call.
                MemorySegment params = MemOpParams.encode(MemOp.encoded(checked), arena);
                try {
                    calls.batch(s.handle(), checked.size(), params);
                } finally {
                    s.submitted();
                }
            }
        }
    }

    /**
     * Queues one operation ({@code MemOp.WRITE32}, ...) on a word: {@code view}, or else
     * {@code mapped}, checked by the caller. Under the stream's lock, as every submission: the
     * open check, the use record (which a capture's scope holds) and the driver call together.
     * Null checks and argument checks come first, so nothing is marked used for refused input.
     */
    private void queue(int operation, DeviceView view, MappedWord mapped, long value, int bits) {
        StreamState s = stream.openState();
        synchronized (s.lock()) {
            s.checkOpen();
            refuseInBody(s);
            // An aligned word inside an open allocation (device memory, or mapped host memory) of
            // this context that now lists this stream.
            long address = MemOp.useWord(view, mapped, context, s);
            MemorySegment handle = s.handle();
            try {
                if (operation == MemOp.WRITE32) {
                    calls.write32(handle, address, (int) value, bits);
                } else if (operation == MemOp.WRITE64) {
                    calls.write64(handle, address, value, bits);
                } else if (operation == MemOp.WAIT32) {
                    calls.wait32(handle, address, (int) value, bits);
                } else {
                    calls.wait64(handle, address, value, bits);
                }
            } finally {
                s.submitted();
            }
        }
    }

    /**
     * Refuses, under the stream's lock and before anything is marked used, an operation on a
     * stream that captures into a conditional node's body: the driver allows no memory-operation
     * node in one.
     */
    private void refuseInBody(StreamState s) {
        CaptureScope scope = s.captureScope();
        String body = scope == null ? null : scope.conditionalBody();
        if (body != null) {
            throw new IllegalStateException(stream + " captures into " + body + ", and the driver allows no stream "
                    + "memory operation node in a conditional body; queue it before or after the conditional node");
        }
    }

    @Override
    public String toString() {
        return "StreamMemOps[" + stream + "]";
    }
}
