package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.memory.MappedMemory;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * An 8-byte word of pinned host memory mapped into the device ({@code cuMemHostAlloc} with
 * {@code DEVICEMAP | PORTABLE}, {@code cuMemHostGetDevicePointer}), which the GPU sets and the
 * host polls without a driver call: a stop flag, an accepted-token count, a loop condition.
 * A kernel writes it through {@link #deviceAddress()} (a {@code KernelArg.address}), a stream
 * through {@link StreamMemOps#write32(MappedWord, int, WriteFlag)}; the host reads it with
 * {@link #getInt()} or {@link #getLong()}, which are acquire reads, and may set it for a
 * stream's {@link StreamMemOps#wait32(MappedWord, int, WaitCondition, WaitFlag) wait} with the
 * release writes {@link #setInt} and {@link #setLong}. A 32-bit operation uses the word's low
 * four bytes (the device and the host are little-endian), which {@link #getInt()} reads.
 *
 * <p><b>What it guarantees.</b> A stream write of a value with {@link WriteFlag#DEFAULT} has a
 * memory barrier before it: once the host's acquire read sees the value, the host also sees
 * every write that work earlier in that stream's order made to host memory (other mapped words,
 * pinned buffers), and that work has completed. A kernel that sets the word gives that ordering
 * only for its own earlier writes and only if it fences them ({@code __threadfence_system()})
 * before the store.
 *
 * <p><b>What it does not.</b> Nothing orders it with work on other streams. The host sees a
 * value late (it crosses PCIe or the chip link: about a microsecond, more under load), never
 * early. It is not a substitute for a synchronous copy of device memory, nor for
 * {@link Stream#synchronize()} before reading bulk device data: the barrier covers host-visible
 * memory; device memory is read through Gatun's copies, which order themselves after queued work.
 *
 * <p>One lifecycle as every owner: {@link #close()} hands it to retirement, which frees it once
 * the stream memory operations queued on it have completed (and a graph that names it holds
 * it until its last launch completed); the host view is closed first, so a read after close is
 * an {@link IllegalStateException}, never a read of freed memory.
 */
public final class MappedWord extends Owner {

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final CudaContext context;
    private final MappedMemory memory;
    private final MemorySegment view;

    private MappedWord(CudaContext context, MappedMemory memory) {
        super(memory);
        this.context = context;
        this.memory = memory;
        this.view = memory.view();
    }

    static MappedWord allocate(CudaContext context) {
        return new MappedWord(context, MappedMemory.allocate(context.state()));
    }

    /** {@return the context it was allocated in} */
    public CudaContext context() {
        return context;
    }

    /**
     * {@return the word's device address, for a kernel argument ({@code KernelArg.address})} Valid
     * while this word is open. A launch does not see a raw address, so its use is not fenced:
     * close the word only once the kernels given its address have completed (the host saw the
     * value they write, or their stream was synchronized). Stream memory operations on the word
     * are fenced as usual.
     */
    public long deviceAddress() {
        memory.checkOpen();
        return memory.deviceAddress();
    }

    /** {@return the low 32 bits, read with acquire semantics (see the class comment)} No driver call. */
    public int getInt() {
        return (int) INT.getAcquire(view, 0L);
    }

    /** {@return the whole 64-bit word, read with acquire semantics (see the class comment)} No driver call. */
    public long getLong() {
        return (long) LONG.getAcquire(view, 0L);
    }

    /**
     * Sets the low 32 bits, with release semantics: a stream waiting on the word sees the value
     * (late, never early), and the host's earlier writes to host memory before it.
     *
     * @param value the new low 32 bits
     */
    public void setInt(int value) {
        INT.setRelease(view, 0L, value);
    }

    /**
     * Sets the whole word, with release semantics (see {@link #setInt}).
     *
     * @param value the new 64-bit value
     */
    public void setLong(long value) {
        LONG.setRelease(view, 0L, value);
    }

    /** Checks that the word is open and of {@code user}'s context, then records use on {@code stream} (under its lock). */
    void useOn(CudaContext user, StreamState stream) {
        memory.checkOpen();
        user.checkSame(context, memory);
        memory.usedOn(stream);
    }

    /** The word's resource, for a graph that names it. */
    MappedMemory resource() {
        memory.checkOpen();
        return memory;
    }
}
