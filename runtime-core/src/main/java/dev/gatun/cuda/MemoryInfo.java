package dev.gatun.cuda;

/**
 * Free and total device memory as the driver reports them ({@code cuMemGetInfo}).
 *
 * @param freeBytes free device memory, in bytes, for every process on the device
 * @param totalBytes the device's total memory, in bytes
 */
public record MemoryInfo(long freeBytes, long totalBytes) {
}
