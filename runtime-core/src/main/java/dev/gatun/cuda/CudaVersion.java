package dev.gatun.cuda;

/**
 * A CUDA version in the driver's encoding ({@code 1000 * major + 10 * minor}, e.g. 13000 for
 * 13.0, 12040 for 12.4), as {@code cuDriverGetVersion} reports it.
 *
 * @param encoded {@code 1000 * major + 10 * minor}
 */
public record CudaVersion(int encoded) implements Comparable<CudaVersion> {

    /**
     * {@return the version of the driver's encoding {@code encoded}, e.g. 12040 for 12.4}
     *
     * @param encoded {@code 1000 * major + 10 * minor}
     */
    public static CudaVersion of(int encoded) {
        return new CudaVersion(encoded);
    }

    /** {@return the major version, e.g. 12 for 12.4} */
    public int major() {
        return encoded / 1000;
    }

    /** {@return the minor version, e.g. 4 for 12.4} */
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
