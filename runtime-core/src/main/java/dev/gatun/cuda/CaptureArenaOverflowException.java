package dev.gatun.cuda;

/**
 * An allocation inside a capture into a {@link CaptureArena} did not fit the arena's mapped
 * memory (or, in a {@linkplain CaptureArena#probe probe}, its reserved address range). Nothing was
 * allocated; the capture is still open, to abort (closing it aborts it). The report says what the
 * capture needed, what the arena has mapped and reserved, and what the device has free: map more
 * with {@link CaptureArena#ensure} before capturing again, or reserve a larger arena.
 */
public final class CaptureArenaOverflowException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The bytes the capture needed, this allocation included. */
    private final long neededBytes;
    /** The bytes the arena had mapped. */
    private final long mappedBytes;
    /** The address range the arena reserved. */
    private final long reservedBytes;
    /** The device's free memory, or -1. */
    private final long deviceFreeBytes;

    /**
     * Reports an allocation that did not fit.
     *
     * @param arena the arena's identity, for the message
     * @param neededBytes the bytes the capture needed with this allocation
     * @param mappedBytes the bytes the arena has mapped
     * @param reservedBytes the address range the arena reserved
     * @param deviceFreeBytes the device's free memory, or -1 when it could not be read
     */
    public CaptureArenaOverflowException(String arena, long neededBytes, long mappedBytes, long reservedBytes,
            long deviceFreeBytes) {
        super("a capture into " + arena + " needs " + neededBytes + " bytes, but the arena has " + mappedBytes
                + " bytes mapped (" + reservedBytes + " reserved; the device has "
                + (deviceFreeBytes < 0 ? "an unknown amount of" : Long.toString(deviceFreeBytes)) + " bytes free). "
                + (neededBytes > reservedBytes
                        ? "Reserve a larger arena (CaptureArena.reserve with more bytes)"
                        : "Map enough before capturing: CaptureArena.ensure(" + neededBytes + "), or probe the work first")
                + "; abort this capture");
        this.neededBytes = neededBytes;
        this.mappedBytes = mappedBytes;
        this.reservedBytes = reservedBytes;
        this.deviceFreeBytes = deviceFreeBytes;
    }

    /** {@return the bytes the capture needed, this allocation included} */
    public long neededBytes() {
        return neededBytes;
    }

    /** {@return the bytes the arena had mapped} */
    public long mappedBytes() {
        return mappedBytes;
    }

    /** {@return the address range the arena reserved: the most it can map} */
    public long reservedBytes() {
        return reservedBytes;
    }

    /** {@return the device's free memory when the allocation failed, or -1 when it could not be read} */
    public long deviceFreeBytes() {
        return deviceFreeBytes;
    }
}
