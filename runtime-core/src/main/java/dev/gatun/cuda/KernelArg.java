package dev.gatun.cuda;

/**
 * One kernel argument, as it is laid out for the launch: a device pointer, or an 8/16/32/64-bit
 * integer or a 32/64-bit float scalar.
 */
public sealed interface KernelArg {

    /** {@return size in bytes of the argument as the kernel receives it} */
    long byteSize();

    /**
     * A device pointer: to the start of {@code view} (its buffer is tracked: it cannot be freed
     * under the launch), or, when {@code view} is null, the raw {@code address} (see
     * {@link #address(long)}).
     *
     * @param view the view the pointer points at the start of; null for a raw address
     * @param address the raw device address, used when {@code view} is null
     */
    record Pointer(DeviceView view, long address) implements KernelArg {
        @Override
        public long byteSize() {
            return 8;
        }
    }

    /**
     * An 8-bit integer ({@code char}, {@code int8_t}).
     *
     * @param value the value the kernel receives
     */
    record I8(byte value) implements KernelArg {
        @Override
        public long byteSize() {
            return 1;
        }
    }

    /**
     * A 16-bit integer ({@code short}, {@code int16_t}).
     *
     * @param value the value the kernel receives
     */
    record I16(short value) implements KernelArg {
        @Override
        public long byteSize() {
            return 2;
        }
    }

    /**
     * A 32-bit integer ({@code int}).
     *
     * @param value the value the kernel receives
     */
    record I32(int value) implements KernelArg {
        @Override
        public long byteSize() {
            return 4;
        }
    }

    /**
     * A 64-bit integer ({@code long long}).
     *
     * @param value the value the kernel receives
     */
    record I64(long value) implements KernelArg {
        @Override
        public long byteSize() {
            return 8;
        }
    }

    /**
     * A 32-bit float ({@code float}).
     *
     * @param value the value the kernel receives
     */
    record F32(float value) implements KernelArg {
        @Override
        public long byteSize() {
            return 4;
        }
    }

    /**
     * A 64-bit float ({@code double}).
     *
     * @param value the value the kernel receives
     */
    record F64(double value) implements KernelArg {
        @Override
        public long byteSize() {
            return 8;
        }
    }

    /**
     * A pointer to the start of {@code view}.
     *
     * @param view the view whose first byte the kernel receives the address of
     * @return the argument
     * @throws NullPointerException when {@code view} is null: a kernel would receive a NULL device
     *     pointer; pass {@link #address(long) address(0)} when that is what it expects
     */
    static KernelArg pointer(DeviceView view) {
        return new Pointer(requireTarget(view), 0);
    }

    /**
     * A pointer to the start of {@code buffer}.
     *
     * @param buffer the buffer whose first byte the kernel receives the address of
     * @return the argument
     * @throws NullPointerException when {@code buffer} is null (see {@link #pointer(DeviceView)})
     */
    static KernelArg pointer(DeviceBuffer buffer) {
        return new Pointer(requireTarget(buffer).bytes(), 0);
    }

    /**
     * A raw device address that Gatun does not own (interop); its lifetime is the caller's. This is
     * also the one way to pass a NULL device pointer on purpose ({@code address(0)}), for a
     * kernel that takes an optional pointer.
     *
     * @param deviceAddress the address the kernel receives; 0 for NULL
     * @return the argument
     */
    static KernelArg address(long deviceAddress) {
        return new Pointer(null, deviceAddress);
    }

    private static <T> T requireTarget(T viewOrBuffer) {
        if (viewOrBuffer == null) {
            throw new NullPointerException("KernelArg.pointer needs a device view or buffer, not null; for a "
                    + "deliberate NULL device pointer pass KernelArg.address(0)");
        }
        return viewOrBuffer;
    }

    /**
     * {@return an 8-bit integer argument}
     *
     * @param v the value the kernel receives
     */
    static KernelArg i8(byte v) {
        return new I8(v);
    }

    /**
     * {@return a 16-bit integer argument}
     *
     * @param v the value the kernel receives
     */
    static KernelArg i16(short v) {
        return new I16(v);
    }

    /**
     * {@return a 32-bit integer argument}
     *
     * @param v the value the kernel receives
     */
    static KernelArg i32(int v) {
        return new I32(v);
    }

    /**
     * {@return a 64-bit integer argument}
     *
     * @param v the value the kernel receives
     */
    static KernelArg i64(long v) {
        return new I64(v);
    }

    /**
     * {@return a 32-bit float argument}
     *
     * @param v the value the kernel receives
     */
    static KernelArg f32(float v) {
        return new F32(v);
    }

    /**
     * {@return a 64-bit float argument}
     *
     * @param v the value the kernel receives
     */
    static KernelArg f64(double v) {
        return new F64(v);
    }
}
