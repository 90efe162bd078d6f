package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.launch.MemOpParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One stream memory operation of a batch ({@link StreamMemOps#batch}, {@link Graph#addBatchMemOps}):
 * a 32/64-bit write or wait on a device word (a {@link DeviceView} of exactly 4 or 8 bytes, aligned
 * to its size) or on a {@link MappedWord}. A value: it holds no resource, and its target is
 * checked (open, of the stream's or graph's context) each time it is queued. Its size and
 * alignment are checked here, before any driver call.
 */
public final class MemOp {

    /** Most operations in one batch: the driver takes fewer than 256. */
    public static final int MAX_BATCH = 255;

    static final int WRITE32 = MemOpParams.WRITE32;
    static final int WRITE64 = MemOpParams.WRITE64;
    static final int WAIT32 = MemOpParams.WAIT32;
    static final int WAIT64 = MemOpParams.WAIT64;

    private final int operation;
    private final DeviceView view;
    private final MappedWord mapped;
    private final long value;
    private final int flags;
    private final WaitCondition condition;
    private final WaitFlag waitFlag;

    private MemOp(int operation, DeviceView view, MappedWord mapped, long value, int flags, WaitCondition condition,
            WaitFlag waitFlag) {
        this.operation = operation;
        this.view = view;
        this.mapped = mapped;
        this.value = value;
        this.flags = flags;
        this.condition = condition;
        this.waitFlag = waitFlag;
    }

    /**
     * A write of {@code value} to a 4-byte word.
     *
     * @param word a view of exactly 4 bytes, 4-byte aligned
     * @param value the value written
     * @param flag the write's ordering
     * @return the operation
     */
    public static MemOp write32(DeviceView word, int value, WriteFlag flag) {
        return new MemOp(WRITE32, checkWord(word, 4, "write32"), null, value & 0xFFFF_FFFFL, flag.bits, null, null);
    }

    /**
     * A write of {@code value} to an 8-byte word (devices with {@link StreamMemOpSupport#values64()}).
     *
     * @param word a view of exactly 8 bytes, 8-byte aligned
     * @param value the value written
     * @param flag the write's ordering
     * @return the operation
     */
    public static MemOp write64(DeviceView word, long value, WriteFlag flag) {
        return new MemOp(WRITE64, checkWord(word, 8, "write64"), null, value, flag.bits, null, null);
    }

    /**
     * A write of {@code value} to a mapped word's low 32 bits.
     *
     * @param word the mapped word
     * @param value the value written
     * @param flag the write's ordering
     * @return the operation
     */
    public static MemOp write32(MappedWord word, int value, WriteFlag flag) {
        return new MemOp(WRITE32, null, Objects.requireNonNull(word, "word"), value & 0xFFFF_FFFFL, flag.bits, null,
                null);
    }

    /**
     * A write of {@code value} to a whole mapped word (devices with {@link StreamMemOpSupport#values64()}).
     *
     * @param word the mapped word
     * @param value the value written
     * @param flag the write's ordering
     * @return the operation
     */
    public static MemOp write64(MappedWord word, long value, WriteFlag flag) {
        return new MemOp(WRITE64, null, Objects.requireNonNull(word, "word"), value, flag.bits, null, null);
    }

    /**
     * A wait until a 4-byte word meets {@code condition} against {@code value}.
     *
     * @param word a view of exactly 4 bytes, 4-byte aligned
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     * @return the operation
     */
    public static MemOp wait32(DeviceView word, int value, WaitCondition condition, WaitFlag flag) {
        return new MemOp(WAIT32, checkWord(word, 4, "wait32"), null, value & 0xFFFF_FFFFL,
                condition.bits | flag.bits, condition, flag);
    }

    /**
     * A wait until an 8-byte word meets {@code condition} against {@code value} (devices with
     * {@link StreamMemOpSupport#values64()}).
     *
     * @param word a view of exactly 8 bytes, 8-byte aligned
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     * @return the operation
     */
    public static MemOp wait64(DeviceView word, long value, WaitCondition condition, WaitFlag flag) {
        return new MemOp(WAIT64, checkWord(word, 8, "wait64"), null, value, condition.bits | flag.bits, condition,
                flag);
    }

    /**
     * A wait until a mapped word's low 32 bits meet {@code condition} against {@code value}.
     *
     * @param word the mapped word
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     * @return the operation
     */
    public static MemOp wait32(MappedWord word, int value, WaitCondition condition, WaitFlag flag) {
        return new MemOp(WAIT32, null, Objects.requireNonNull(word, "word"), value & 0xFFFF_FFFFL,
                condition.bits | flag.bits, condition, flag);
    }

    /**
     * A wait until a whole mapped word meets {@code condition} against {@code value} (devices with
     * {@link StreamMemOpSupport#values64()}).
     *
     * @param word the mapped word
     * @param value the operand
     * @param condition what to wait for
     * @param flag what the wait does once the condition holds
     * @return the operation
     */
    public static MemOp wait64(MappedWord word, long value, WaitCondition condition, WaitFlag flag) {
        return new MemOp(WAIT64, null, Objects.requireNonNull(word, "word"), value, condition.bits | flag.bits,
                condition, flag);
    }

    /**
     * {@code word} itself, once checked to be exactly {@code bytes} long and aligned to them
     * ({@code operation} names the refused call).
     */
    static DeviceView checkWord(DeviceView word, int bytes, String operation) {
        Objects.requireNonNull(word, "word");
        if (word.byteSize() != bytes || (word.address() & (bytes - 1)) != 0) {
            throw new IllegalArgumentException(operation + " names one " + bytes + "-byte word: the view must be "
                    + "exactly " + bytes + " bytes long and " + bytes + "-byte aligned (offset " + word.byteOffset()
                    + ", length " + word.byteSize() + "); take it with slice(i, 1) of a view of "
                    + (bytes == 4 ? "ints" : "longs"));
        }
        return word;
    }

    /**
     * Refuses what {@code device} does not support, before the driver sees it: a 64-bit operation,
     * a NOR wait, a flushing wait (null condition and flag: a write).
     */
    static void checkSupported(Device device, boolean is64, WaitCondition condition, WaitFlag flag) {
        StreamMemOpSupport support = device.streamMemOpSupport();
        if (is64 && !support.values64()) {
            throw new IllegalArgumentException("device " + device.ordinal() + " does not support 64-bit stream memory "
                    + "operations (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS is 0): use a 32-bit word");
        }
        if (condition == WaitCondition.NOR && !support.waitNor()) {
            throw new IllegalArgumentException("device " + device.ordinal() + " does not support NOR waits "
                    + "(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR is 0): wait with EQ, GEQ or AND");
        }
        if (flag == WaitFlag.FLUSH && !support.flushRemoteWrites()) {
            throw new IllegalArgumentException("device " + device.ordinal() + " cannot flush remote writes "
                    + "(CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 0): wait with WaitFlag.DEFAULT");
        }
    }

    private boolean is64() {
        return MemOpParams.is64(operation);
    }

    /** Checks this operation against the device of {@code context}. */
    void checkSupported(CudaContext context) {
        checkSupported(context.device(), is64(), condition, waitFlag);
    }

    /** Records use of the target on a stream of {@code context} (under its lock), after checking it is open and of that context. */
    void useOn(CudaContext context, StreamState stream) {
        useWord(view, mapped, context, stream);
    }

    /**
     * Records use of a word ({@code view}, or else {@code mapped}) on a stream of {@code context}
     * (under its lock), after checking it is open and of that context; returns its device address.
     */
    static long useWord(DeviceView view, MappedWord mapped, CudaContext context, StreamState stream) {
        if (view != null) {
            view.useOn(context, stream);
            return view.address();
        }
        mapped.useOn(context, stream);
        return mapped.deviceAddress();
    }

    /** The target's resource, for a graph that holds it, after checking it is open and of {@code context}. */
    NativeResource targetOf(CudaContext context) {
        if (view != null) {
            DeviceBuffer b = view.buffer();
            context.checkSame(b.context(), "the memory operation's word");
            b.address(); // throws when the buffer is closed
            return b.resource();
        }
        context.checkSame(mapped.context(), "the memory operation's mapped word");
        return mapped.resource();
    }

    /** The target's device address (its owner is checked open by {@link #useOn} or {@link #targetOf}). */
    private long address() {
        return view != null ? view.address() : mapped.deviceAddress();
    }

    /**
     * Checks a batch's size and each operation's support on {@code context}'s device; returns the
     * operations, copied.
     */
    static List<MemOp> checkBatch(List<MemOp> ops, CudaContext context) {
        List<MemOp> copy = List.copyOf(ops);
        if (copy.isEmpty() || copy.size() > MAX_BATCH) {
            throw new IllegalArgumentException("a batch holds 1 to " + MAX_BATCH + " operations, not " + copy.size());
        }
        for (MemOp op : copy) {
            op.checkSupported(context);
        }
        return copy;
    }

    /**
     * The operations as the driver is told them ({@link MemOpParams#encode}); call after each
     * target was checked.
     */
    static List<MemOpParams.Op> encoded(List<MemOp> ops) {
        List<MemOpParams.Op> encoded = new ArrayList<>(ops.size());
        for (MemOp op : ops) {
            encoded.add(new MemOpParams.Op(op.operation, op.address(), op.value, op.flags));
        }
        return encoded;
    }

    @Override
    public String toString() {
        String what = operation == WRITE32 ? "write32" : operation == WRITE64 ? "write64"
                : operation == WAIT32 ? "wait32 " + condition : "wait64 " + condition;
        return "MemOp[" + what + " " + (is64() ? value : (int) value) + " at " + (view != null ? view : mapped) + "]";
    }
}
