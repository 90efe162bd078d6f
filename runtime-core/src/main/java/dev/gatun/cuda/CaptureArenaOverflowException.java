package dev.gatun.cuda;

/**
 * An allocation inside a capture into a {@link CaptureArena} did not fit what the arena lets
 * captures take ({@link CaptureArena#byteSize()}), or, in a {@linkplain CaptureArena#probe probe},
 * its reserved address range. Nothing was allocated; the capture is still open, to abort (closing
 * it aborts it). The report says what the capture needed, the limit it met, what the arena
 * reserved, and what the device has free: let captures take more with {@link CaptureArena#ensure}
 * before capturing again, or reserve a larger arena.
 */
public final class CaptureArenaOverflowException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The bytes the capture needed, this allocation included. */
    private final long neededBytes;
    /** The bytes the arena let captures take. */
    private final long usableBytes;
    /** The address range the arena reserved. */
    private final long reservedBytes;
    /** The device's free memory, or -1. */
    private final long deviceFreeBytes;

    /**
     * Reports an allocation that did not fit.
     *
     * @param arena the arena's identity, for the message
     * @param neededBytes the bytes the capture needed with this allocation
     * @param usableBytes the bytes the arena let captures take ({@link CaptureArena#byteSize()})
     * @param reservedBytes the address range the arena reserved
     * @param deviceFreeBytes the device's free memory, or -1 when it could not be read
     */
    public CaptureArenaOverflowException(String arena, long neededBytes, long usableBytes, long reservedBytes,
            long deviceFreeBytes) {
        super("a capture into " + arena + " needs " + neededBytes + " bytes, but "
                + (neededBytes > reservedBytes
                        ? "the arena reserved " + reservedBytes + " (the device has " + free(deviceFreeBytes)
                                + " bytes free). Reserve a larger arena (CaptureArena.reserve with more bytes)"
                        : "captures may take " + usableBytes + " bytes of it (CaptureArena.byteSize(); " + reservedBytes
                                + " reserved; the device has " + free(deviceFreeBytes) + " bytes free). Let them take "
                                + "enough before capturing: CaptureArena.ensure(" + neededBytes + "), or probe the work first")
                + "; abort this capture");
        this.neededBytes = neededBytes;
        this.usableBytes = usableBytes;
        this.reservedBytes = reservedBytes;
        this.deviceFreeBytes = deviceFreeBytes;
    }

    private static String free(long deviceFreeBytes) {
        return deviceFreeBytes < 0 ? "an unknown amount of" : Long.toString(deviceFreeBytes);
    }

    /** {@return the bytes the capture needed, this allocation included} */
    public long neededBytes() {
        return neededBytes;
    }

    /** {@return the bytes the arena let captures take ({@link CaptureArena#byteSize()}) when the allocation failed} */
    public long usableBytes() {
        return usableBytes;
    }

    /** {@return the address range the arena reserved: the most a probe may count, and {@link CaptureArena#ensure} may grant} */
    public long reservedBytes() {
        return reservedBytes;
    }

    /** {@return the device's free memory when the allocation failed, or -1 when it could not be read} */
    public long deviceFreeBytes() {
        return deviceFreeBytes;
    }
}
