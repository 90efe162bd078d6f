package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import java.lang.foreign.MemorySegment;

/**
 * One loaded kernel library ({@code CUlibrary}): code the driver loads once for every context of
 * the process, so one kernel can run on a device's primary context and on each of its green
 * contexts. It belongs to the context that loaded it (its retirement queue unloads it), and its
 * kernels in any context hold it ({@link #hold()}, through the module view
 * {@link ModuleResource#ofLibrary} each kernel keeps): closed while they live, it is unloaded
 * once the last of them has been retired, which waits for their launches' fences on every stream
 * of every context that launched them.
 */
public final class LibraryResource extends NativeResource {

    private final MemorySegment handle;
    private final String artifact;
    private final String sha256;

    public LibraryResource(ContextState context, MemorySegment handle, String artifact, String sha256) {
        super(context, OwnerKind.LIBRARY);
        this.handle = handle;
        this.artifact = artifact;
        this.sha256 = sha256;
    }

    public MemorySegment handle() {
        return handle;
    }

    public String artifact() {
        return artifact;
    }

    public String sha256() {
        return sha256;
    }

    @Override
    protected Retirement.Release howToFree() {
        // No holder remains: every kernel made from the library was retired after its launches'
        // fences, and graphs that launch them hold those kernels' module views.
        return () -> context.calls().libraries().unload(handle);
    }

    @Override
    protected boolean synchronizingFree() {
        return true; // an unload, like a module's, may synchronize the device
    }

    @Override
    public String identity() {
        return "Library#" + id() + " (" + artifact + ", sha256 " + sha256.substring(0, 12) + ")";
    }
}
