package dev.gatun.cuda.internal.launch;

import dev.gatun.cuda.KernelArg;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The native argument block of a prepared launch, built once and updated in place: one 8-byte,
 * 8-aligned slot per argument (every kernel parameter type Gatun passes fits one, at its
 * natural alignment), and the {@code void*} array of slot addresses that cuLaunchKernel's
 * {@code kernelParams} takes. Lives as long as its launch object (GC-managed arena).
 */
public final class ParamBlock {

    private static final int SLOT_BYTES = 8;

    private final MemorySegment slots;
    private final MemorySegment pointers;
    /** {@link #pointers} as a segment of the global scope: see {@link #launchParams()}. */
    private final MemorySegment pointersUnscoped;

    public ParamBlock(int count) {
        // One native block (one malloc, one cleaner) holds the slots, then the pointer array:
        // both are 8 bytes per argument and 8-aligned.
        long half = Math.max(1, count) * (long) SLOT_BYTES;
        MemorySegment block = Arena.ofAuto().allocate(2 * half, SLOT_BYTES);
        this.slots = block.asSlice(0, half);
        this.pointers = block.asSlice(half, half);
        for (int i = 0; i < count; i++) {
            pointers.setAtIndex(ValueLayout.ADDRESS, i, slots.asSlice((long) i * SLOT_BYTES, SLOT_BYTES));
        }
        this.pointersUnscoped = MemorySegment.ofAddress(pointers.address()).reinterpret(half);
    }

    /** The {@code void**} to pass as kernelParams; its automatic arena stays alive while the call has it. */
    public MemorySegment kernelParams() {
        return pointers;
    }

    /**
     * The same {@code void**} as a segment of the global scope, for the launch hot path: a downcall
     * acquires and releases the session of every argument segment that is not global (two atomic
     * updates per launch for {@link #kernelParams()}), this one it passes as it is. Safety: nothing
     * keeps the block alive through this segment, so the caller keeps this {@code ParamBlock}
     * reachable until the call returned ({@code Reference.reachabilityFence}); the driver reads the
     * arguments during {@code cuLaunchKernel} and keeps no pointer to them.
     */
    public MemorySegment launchParams() {
        return pointersUnscoped;
    }

    private long slotOffset(int index) {
        return (long) index * SLOT_BYTES;
    }

    /** Writes argument {@code index}; {@code pointerValue} is the device address when it is a pointer. */
    public void set(int index, KernelArg arg, long pointerValue) {
        long at = slotOffset(index);
        slots.set(ValueLayout.JAVA_LONG, at, 0L); // clear the unused high bytes of a narrow slot
        switch (arg) {
            case KernelArg.Pointer p -> slots.set(ValueLayout.JAVA_LONG, at, pointerValue);
            case KernelArg.I8 v -> slots.set(ValueLayout.JAVA_BYTE, at, v.value());
            case KernelArg.I16 v -> slots.set(ValueLayout.JAVA_SHORT, at, v.value());
            case KernelArg.I32 v -> slots.set(ValueLayout.JAVA_INT, at, v.value());
            case KernelArg.I64 v -> slots.set(ValueLayout.JAVA_LONG, at, v.value());
            case KernelArg.F32 v -> slots.set(ValueLayout.JAVA_FLOAT, at, v.value());
            case KernelArg.F64 v -> slots.set(ValueLayout.JAVA_DOUBLE, at, v.value());
        }
    }

    public void setInt(int index, int value) {
        slots.set(ValueLayout.JAVA_INT, slotOffset(index), value);
    }

    public void setLong(int index, long value) {
        slots.set(ValueLayout.JAVA_LONG, slotOffset(index), value);
    }

    public void setFloat(int index, float value) {
        slots.set(ValueLayout.JAVA_FLOAT, slotOffset(index), value);
    }

    public void setDouble(int index, double value) {
        slots.set(ValueLayout.JAVA_DOUBLE, slotOffset(index), value);
    }

    public void setShort(int index, short value) {
        slots.set(ValueLayout.JAVA_SHORT, slotOffset(index), value);
    }

    public void setByte(int index, byte value) {
        slots.set(ValueLayout.JAVA_BYTE, slotOffset(index), value);
    }

    /** For tests: the raw slot bytes. */
    MemorySegment slots() {
        return slots;
    }
}
