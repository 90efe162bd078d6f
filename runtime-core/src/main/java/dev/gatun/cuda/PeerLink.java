package dev.gatun.cuda;

/**
 * How one device reaches another ({@code cuDeviceGetP2PAttribute}), for the ordered pair
 * {@code from -> to}.
 *
 * @param from the device whose kernels or copies access memory
 * @param to the device that owns the memory
 * @param accessSupported whether peer access can be enabled at all
 * @param nativeAtomics whether atomics over the link are native
 * @param performanceRank the driver's relative rank of this link (lower is better)
 */
public record PeerLink(int from, int to, boolean accessSupported, boolean nativeAtomics, int performanceRank) {
}
