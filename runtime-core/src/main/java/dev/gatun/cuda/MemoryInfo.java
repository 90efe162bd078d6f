package dev.gatun.cuda;

/** Free and total device memory as the driver reports them ({@code cuMemGetInfo}). */
public record MemoryInfo(long freeBytes, long totalBytes) {
}
