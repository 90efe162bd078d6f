package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;
import java.nio.file.Path;

/**
 * {@code gatun_conditional.cuh}, the device side of conditional graph nodes
 * ({@code Graph.addIf}, {@code addIfElse}, {@code addWhile}, {@code addSwitch}): kernels compiled
 * with NVRTC {@code #include "gatun_conditional.cuh"}, take the handle as a
 * {@code cudaGraphConditionalHandle} parameter ({@code ConditionalHandle.asKernelArg()}) and call
 * {@code gatun_conditional_set(handle, value)}; {@code gatun_last_block(arrivals)} picks the one
 * thread that decides once the whole grid is done. The header ships inside this module;
 * {@link #includeDirectory()} puts it on disk for NVRTC's include path.
 *
 * <p>It declares CUDA's {@code cudaGraphSetConditional} itself (NVRTC does not without the
 * toolkit's headers). The call needs no device runtime library: a module compiled without
 * relocatable device code (NVRTC's default) leaves it to the driver, which resolves it when it
 * loads the module (CUDA 12.3 or newer).
 */
public final class ConditionalHeader {

    /** The name kernels include. */
    public static final String FILE_NAME = "gatun_conditional.cuh";

    private static final DeviceHeader HEADER = new DeviceHeader(FILE_NAME, "gatun-conditional-");

    private ConditionalHeader() {
    }

    /**
     * The header's source, e.g. to hand NVRTC as an in-memory header.
     *
     * @return the text of {@code gatun_conditional.cuh}
     * @throws GatunException when it cannot be read from the module (a broken jar)
     */
    public static String text() {
        return HEADER.text();
    }

    /**
     * A directory holding {@link #FILE_NAME}, for NVRTC's {@code --include-path}; written as
     * {@link LatchHeader#includeDirectory()} is.
     *
     * @return the directory that holds {@code gatun_conditional.cuh}
     * @throws GatunException when the temporary directory cannot be written
     */
    public static Path includeDirectory() {
        return HEADER.includeDirectory();
    }
}
