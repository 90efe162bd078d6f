package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;
import java.nio.file.Path;

/**
 * {@code gatun_latch.cuh}, the device side of the {@link ValidationLatch}: kernels compiled with
 * NVRTC {@code #include "gatun_latch.cuh"} and call {@code gatun_latch_raise(word, bits)}. The
 * header ships inside this module; {@link #includeDirectory()} puts it on disk for NVRTC's
 * include path.
 */
public final class LatchHeader {

    /** The name kernels include. */
    public static final String FILE_NAME = "gatun_latch.cuh";

    private static final DeviceHeader HEADER = new DeviceHeader(FILE_NAME, "gatun-latch-");

    private LatchHeader() {
    }

    /**
     * The header's source, e.g. to hand NVRTC as an in-memory header.
     *
     * @return the text of {@code gatun_latch.cuh}
     * @throws GatunException when it cannot be read from the module (a broken jar)
     */
    public static String text() {
        return HEADER.text();
    }

    /**
     * A directory holding {@link #FILE_NAME}, for NVRTC's {@code --include-path}: one directory
     * per user and header content under {@code java.io.tmpdir}, shared by the user's JVMs (a fresh
     * one, deleted at exit, when that one is not safely the user's); written at first use in each
     * JVM and again only if something removed it meanwhile.
     *
     * @return the directory that holds {@code gatun_latch.cuh}
     * @throws GatunException when the temporary directory cannot be written
     */
    public static Path includeDirectory() {
        return HEADER.includeDirectory();
    }
}
