package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.Stream;

/**
 * How Gatun's graph module reaches the internals behind public owners (their handles and
 * resources) without making them public API. {@code dev.gatun.cuda} installs the bridge when
 * {@link CudaContext} is initialized; this package is exported to the graph module only.
 */
public final class Internals {

    /** The accessors the public package provides. */
    public interface Bridge {
        ContextCore context(CudaContext context);

        StreamCore stream(Stream stream);

        OwnedResource buffer(DeviceBuffer buffer);

        ModuleResource module(Kernel kernel);

        /** The kernel's CUfunction. */
        java.lang.foreign.MemorySegment function(Kernel kernel);

        /** A prepared launch's {@code void**} argument block. */
        java.lang.foreign.MemorySegment kernelParams(dev.gatun.cuda.KernelLaunch launch);

        /** The owners of the device buffers a prepared launch passes as arguments. */
        java.util.List<OwnedResource> argumentOwners(dev.gatun.cuda.KernelLaunch launch);
    }

    private static volatile Bridge bridge;

    private Internals() {
    }

    /** Called once by {@code dev.gatun.cuda}. */
    public static void install(Bridge b) {
        bridge = b;
    }

    public static Bridge get() {
        Bridge b = bridge;
        if (b == null) {
            try {
                // Initializing CudaContext installs the bridge.
                Class.forName(CudaContext.class.getName(), true, CudaContext.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("dev.gatun.cuda is not on the module path", e);
            }
            b = bridge;
        }
        return b;
    }
}
