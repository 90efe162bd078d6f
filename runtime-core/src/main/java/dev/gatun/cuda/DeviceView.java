package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * A typed, bounds-checked window onto a {@link DeviceBuffer}: a byte range plus the element type
 * it is read as. Views are cheap values; they do not own memory and become unusable when their
 * buffer is closed. The copies here are synchronous (they return when the data has arrived)
 * and are ordered after all work already queued on any stream that used the buffer.
 */
public final class DeviceView {

    private final DeviceBuffer buffer;
    private final long byteOffset;
    private final long byteSize;
    private final ElementType type;

    DeviceView(DeviceBuffer buffer, long byteOffset, long byteSize, ElementType type) {
        this.buffer = buffer;
        this.byteOffset = byteOffset;
        this.byteSize = byteSize;
        this.type = type;
    }

    /** {@return the buffer this view reads and writes} */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /** {@return the type this view reads its elements as} */
    public ElementType elementType() {
        return type;
    }

    /** {@return where the view starts in its buffer, in bytes} */
    public long byteOffset() {
        return byteOffset;
    }

    /** {@return the view's length in bytes} */
    public long byteSize() {
        return byteSize;
    }

    /** {@return the view's length in elements of {@link #elementType()}} */
    public long elementCount() {
        return byteSize / type.byteSize();
    }

    /**
     * Throws {@link IllegalArgumentException} unless this view starts at a 4-byte aligned address
     * and spans whole 32-bit words, as {@code operation} (which writes words) needs.
     */
    void checkWords(String operation) {
        if ((address() & 3) != 0 || (byteSize & 3) != 0) {
            throw new IllegalArgumentException(operation + " writes 32-bit words: the view must be 4-byte aligned and "
                    + "a multiple of 4 bytes long (offset " + byteOffset + ", length " + byteSize + ")");
        }
    }

    /** {@return the device address of the first byte ({@code CUdeviceptr})} */
    public long address() {
        return buffer.address() + byteOffset;
    }

    /**
     * A sub-view of {@code count} elements starting at element {@code first}.
     *
     * @param first the first element of the sub-view, counted in this view's elements
     * @param count how many elements the sub-view spans
     * @return the sub-view, over the same buffer
     * @throws IndexOutOfBoundsException when the range leaves this view
     */
    public DeviceView slice(long first, long count) {
        long size = type.byteSize();
        if (first < 0 || count < 0 || first > elementCount() || count > elementCount() - first) {
            throw new IndexOutOfBoundsException("slice [" + first + ", " + first + " + " + count + ") of a view of "
                    + elementCount() + " " + type + " elements");
        }
        return new DeviceView(buffer, byteOffset + first * size, count * size, type);
    }

    /**
     * The same bytes read as another element type; the byte length must be a whole number of them.
     *
     * @param other the element type to read the bytes as
     * @return a view of the same bytes
     */
    public DeviceView as(ElementType other) {
        Objects.requireNonNull(other);
        if (byteSize % other.byteSize() != 0) {
            throw new IllegalArgumentException(byteSize + " bytes are not a whole number of " + other + " elements");
        }
        return new DeviceView(buffer, byteOffset, byteSize, other);
    }

    /**
     * For a graph node that names this view ({@code what}, in refusals): checks that its buffer is
     * open and of {@code graphContext}, and that it is not empty; returns the buffer's memory.
     */
    NativeResource nodeTarget(CudaContext graphContext, String what) {
        graphContext.checkSame(buffer.context(), what);
        buffer.address(); // throws when the buffer is closed
        if (byteSize == 0) {
            throw new IllegalArgumentException(what + " is empty; add no node for it");
        }
        return buffer.resource();
    }

    /** Records use on a stream of {@code context}, after checking the buffer is open and of that context. */
    void useOn(CudaContext context, StreamState stream) {
        buffer.useOn(context, stream);
    }

    /**
     * Copies {@code source} (any host segment, heap included) into this view; returns when done.
     *
     * @param source the bytes to copy; as long as this view
     */
    public void copyFrom(MemorySegment source) {
        Ranges.sameLength(byteSize, source.byteSize());
        buffer.checkSynchronous("copyFrom(host)");
        buffer.context().copies().upload(buffer.resource(), buffer, address(), source);
    }

    /**
     * Copies this view into {@code destination} (any host segment, heap included); returns when done.
     *
     * @param destination where to copy the bytes; as long as this view
     */
    public void copyTo(MemorySegment destination) {
        Ranges.sameLength(destination.byteSize(), byteSize);
        buffer.checkSynchronous("copyTo(host)");
        buffer.context().copies().download(destination, buffer.resource(), buffer, address());
    }

    /**
     * Copies another device view (same byte length) into this one; returns when done. The source
     * may be on another device (a peer copy; see {@link Stream#copy}).
     *
     * @param source the view to copy from
     */
    public void copyFrom(DeviceView source) {
        Ranges.sameLength(byteSize, source.byteSize());
        buffer.checkSynchronous("copyFrom(device)");
        source.buffer.checkSynchronous("copyFrom(device)");
        buffer.context().checkSameDriver(source.buffer.context(), "the source");
        buffer.context().copies().copyOnDevice(buffer.resource(), buffer, address(), source.buffer.resource(),
                source.buffer, source.address(), byteSize);
    }

    /**
     * Copies {@code source} into this view; returns when done.
     *
     * @param source the values to copy, as many bytes in all as this view holds
     */
    public void copyFrom(byte[] source) {
        copyFromArray(source, ValueLayout.JAVA_BYTE, source.length);
    }

    /**
     * Copies {@code source} into this view; returns when done.
     *
     * @param source the values to copy, as many bytes in all as this view holds
     */
    public void copyFrom(short[] source) {
        copyFromArray(source, ValueLayout.JAVA_SHORT, source.length);
    }

    /**
     * Copies {@code source} into this view; returns when done.
     *
     * @param source the values to copy, as many bytes in all as this view holds
     */
    public void copyFrom(int[] source) {
        copyFromArray(source, ValueLayout.JAVA_INT, source.length);
    }

    /**
     * Copies {@code source} into this view; returns when done.
     *
     * @param source the values to copy, as many bytes in all as this view holds
     */
    public void copyFrom(long[] source) {
        copyFromArray(source, ValueLayout.JAVA_LONG, source.length);
    }

    /**
     * Copies {@code source} into this view; returns when done.
     *
     * @param source the values to copy, as many bytes in all as this view holds
     */
    public void copyFrom(float[] source) {
        copyFromArray(source, ValueLayout.JAVA_FLOAT, source.length);
    }

    /**
     * Copies {@code source} into this view; returns when done.
     *
     * @param source the values to copy, as many bytes in all as this view holds
     */
    public void copyFrom(double[] source) {
        copyFromArray(source, ValueLayout.JAVA_DOUBLE, source.length);
    }

    /**
     * Copies this view into {@code destination}; returns when done.
     *
     * @param destination where the values go, as many bytes in all as this view holds
     */
    public void copyTo(byte[] destination) {
        copyToArray(destination, ValueLayout.JAVA_BYTE, destination.length);
    }

    /**
     * Copies this view into {@code destination}; returns when done.
     *
     * @param destination where the values go, as many bytes in all as this view holds
     */
    public void copyTo(short[] destination) {
        copyToArray(destination, ValueLayout.JAVA_SHORT, destination.length);
    }

    /**
     * Copies this view into {@code destination}; returns when done.
     *
     * @param destination where the values go, as many bytes in all as this view holds
     */
    public void copyTo(int[] destination) {
        copyToArray(destination, ValueLayout.JAVA_INT, destination.length);
    }

    /**
     * Copies this view into {@code destination}; returns when done.
     *
     * @param destination where the values go, as many bytes in all as this view holds
     */
    public void copyTo(long[] destination) {
        copyToArray(destination, ValueLayout.JAVA_LONG, destination.length);
    }

    /**
     * Copies this view into {@code destination}; returns when done.
     *
     * @param destination where the values go, as many bytes in all as this view holds
     */
    public void copyTo(float[] destination) {
        copyToArray(destination, ValueLayout.JAVA_FLOAT, destination.length);
    }

    /**
     * Copies this view into {@code destination}; returns when done.
     *
     * @param destination where the values go, as many bytes in all as this view holds
     */
    public void copyTo(double[] destination) {
        copyToArray(destination, ValueLayout.JAVA_DOUBLE, destination.length);
    }

    /** The array copies: no segment is wrapped around a small array (see SynchronousCopies.uploadArray). */
    private void copyFromArray(Object source, ValueLayout element, int count) {
        Ranges.sameLength(byteSize, element.byteSize() * count);
        buffer.checkSynchronous("copyFrom(host)");
        buffer.context().copies().uploadArray(buffer.resource(), buffer, address(), source, element, count);
    }

    private void copyToArray(Object destination, ValueLayout element, int count) {
        Ranges.sameLength(element.byteSize() * count, byteSize);
        buffer.checkSynchronous("copyTo(host)");
        buffer.context().copies().downloadArray(destination, element, count, buffer.resource(), buffer, address());
    }

    @Override
    public String toString() {
        return "DeviceView[" + buffer + ", bytes " + byteOffset + "+" + byteSize + ", " + type + "]";
    }
}
