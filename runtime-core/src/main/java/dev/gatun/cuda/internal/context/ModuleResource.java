package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One loaded CUmodule, shared by reference count: the registry entry that installed it, every
 * kernel obtained from it, and every captured graph that launches its kernels each hold a
 * reference. When the last one goes, the module is retired like any owner: it is unloaded once
 * the fences of every stream its kernels were launched on have completed. So a module replaced
 * in the registry keeps working for the kernels and graphs that still use it.
 */
public final class ModuleResource extends NativeResource {

    private final MemorySegment handle;
    private final String name;
    private final String artifact;
    private final String sha256;
    private final AtomicInteger references = new AtomicInteger(1);

    public ModuleResource(ContextState context, MemorySegment handle, String name, String artifact, String sha256) {
        super(context, OwnerKind.MODULE);
        this.handle = handle;
        this.name = name;
        this.artifact = artifact;
        this.sha256 = sha256;
        listAsLive(); // no public owner watches a module: it is listed once its fields are set
    }

    public MemorySegment handle() {
        return handle;
    }

    public String name() {
        return name;
    }

    public String artifact() {
        return artifact;
    }

    public String sha256() {
        return sha256;
    }

    /**
     * Takes a reference.
     *
     * @throws IllegalStateException when the last reference is already gone (the module is retired)
     */
    public void retain() {
        int n;
        do {
            n = references.get();
            if (n <= 0) {
                throw new IllegalStateException(identity() + " is already unloaded");
            }
        } while (!references.compareAndSet(n, n + 1));
    }

    /** Drops a reference; the last one hands the module to retirement. */
    public void release() {
        int n = references.decrementAndGet();
        if (n == 0) {
            close();
        } else if (n < 0) {
            throw new IllegalStateException(identity() + " released more often than retained");
        }
    }

    public int references() {
        return references.get();
    }

    @Override
    protected Retirement.Release howToFree() {
        // Every stream that launched this module's kernels has passed a later fence, and no
        // holder remains that could launch again (graphs hold references while they can).
        return () -> context.calls().modules().unload(handle);
    }

    @Override
    protected boolean synchronizingFree() {
        return true;
    }

    @Override
    public String identity() {
        return "Module#" + id() + " '" + name + "' (" + artifact + ", sha256 " + sha256.substring(0, 12) + ")";
    }
}
