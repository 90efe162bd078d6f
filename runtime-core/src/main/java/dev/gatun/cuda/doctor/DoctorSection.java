package dev.gatun.cuda.doctor;

import java.util.function.Consumer;

/**
 * A section another Gatun module adds to the {@link Doctor}'s report, after NVRTC: gatun-blas
 * reports cuBLASLt, cuBLAS and cuDNN (where each was found, its version, or every path tried).
 * Found with {@link java.util.ServiceLoader} through the doctor's class loader ({@code provides}
 * in a module, {@code META-INF/services} on the class path), so runtime-core depends on no such
 * module: without one on the path, the report is unchanged.
 */
public interface DoctorSection {

    /**
     * Writes this section's lines, in the report's style ({@code "name:    what was found"}, details
     * indented by nine spaces). Looking must change nothing, and what it finds (a missing library)
     * is a line, not an exception; an exception thrown anyway is reported as the section's failure.
     *
     * @param line takes one line at a time, without its line separator
     */
    void report(Consumer<String> line);
}
