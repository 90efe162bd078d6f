package dev.gatun.cuda;

/**
 * A CUDA version in the driver's encoding ({@code 1000 * major + 10 * minor}, e.g. 13000 for
 * 13.0, 12040 for 12.4), as {@code cuDriverGetVersion} reports it.
 */
public record CudaVersion(int encoded) implements Comparable<CudaVersion> {

    public static CudaVersion of(int encoded) {
        return new CudaVersion(encoded);
    }

    public int major() {
        return encoded / 1000;
    }

    public int minor() {
        return (encoded % 1000) / 10;
    }

    @Override
    public int compareTo(CudaVersion o) {
        return Integer.compare(encoded, o.encoded);
    }

    @Override
    public String toString() {
        return major() + "." + minor();
    }
}
