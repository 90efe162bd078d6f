package dev.gatun.cuda;

/**
 * A {@link GrowableBuffer} was asked to grow past the address range it reserved. Nothing
 * changed: the buffer keeps its size and mappings. The reservation is fixed when the buffer is
 * made; to grow further, reserve a larger range ({@link GrowableBufferOptions#maxBytes}) for a new
 * buffer and copy into it.
 */
public final class ReservationExceededException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The size growth was asked for. */
    private final long requestedBytes;
    /** The buffer's reserved maximum. */
    private final long reservedBytes;

    /**
     * Reports a refused growth.
     *
     * @param owner the buffer's identity, for the message
     * @param requestedBytes the size growth was asked for
     * @param reservedBytes the buffer's reserved maximum
     */
    public ReservationExceededException(String owner, long requestedBytes, long reservedBytes) {
        super(owner + " cannot grow to " + requestedBytes + " bytes: it reserved " + reservedBytes
                + " bytes of address space, its maximum. Reserve more when making it (GrowableBufferOptions.maxBytes; "
                + "the default reserves the device's total memory) and copy into the new buffer");
        this.requestedBytes = requestedBytes;
        this.reservedBytes = reservedBytes;
    }

    /** {@return the size growth was asked for} */
    public long requestedBytes() {
        return requestedBytes;
    }

    /** {@return the buffer's reserved maximum} */
    public long reservedBytes() {
        return reservedBytes;
    }
}
