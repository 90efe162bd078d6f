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
 *
 * <p>A {@linkplain #borrow borrowed} module was loaded by another library: its retirement waits
 * for the same fences but unloads nothing, since its loader unloads it.
 */
public final class ModuleResource extends NativeResource {

    private final MemorySegment handle;
    private final String name;
    private final String artifact;
    private final String sha256;
    private final boolean borrowed;
    /** The library this module view stands for ({@link #ofLibrary}), or null. */
    private final LibraryResource library;
    private final AtomicInteger references = new AtomicInteger(1);

    public ModuleResource(ContextState context, MemorySegment handle, String name, String artifact, String sha256) {
        this(context, handle, name, artifact, sha256, false, null);
    }

    private ModuleResource(ContextState context, MemorySegment handle, String name, String artifact, String sha256,
            boolean borrowed, LibraryResource library) {
        super(context, OwnerKind.MODULE);
        this.handle = handle;
        this.name = name;
        this.artifact = artifact;
        this.sha256 = sha256;
        this.borrowed = borrowed;
        this.library = library;
        listAsLive(); // no public owner watches a module: it is listed once its fields are set
    }

    /**
     * Another library's loaded module, with one reference (the caller's). Gatun never saw its
     * image: it has no registry name and no digest (both empty).
     */
    public static ModuleResource borrow(ContextState context, MemorySegment handle) {
        return new ModuleResource(context, handle, "", "CUmodule 0x" + Long.toHexString(handle.address()), "", true, null);
    }

    /**
     * The module of one kernel of {@code library} in {@code context}, with one reference (the
     * kernel's): it holds the library from the caller's {@link LibraryResource#hold()}, which its
     * retirement drops. It has no {@code CUmodule} of its own (NULL) and no registry name.
     */
    public static ModuleResource ofLibrary(ContextState context, LibraryResource library) {
        return new ModuleResource(context, MemorySegment.NULL, "", library.artifact(), library.sha256(), false, library);
    }

    @Override
    public boolean borrowed() {
        return borrowed;
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
        if (borrowed) {
            // The kernels launched from it are done; its loader unloads it, not Gatun.
            return Retirement.Release.withoutDriver(() -> { });
        }
        if (library != null) {
            // The kernel launched from it in this context is done; the library's own retirement
            // unloads it once no context's kernel holds it.
            return Retirement.Release.withoutDriver(library::unhold);
        }
        // Every stream that launched this module's kernels has passed a later fence, and no
        // holder remains that could launch again (graphs hold references while they can).
        return () -> context.calls().modules().unload(handle);
    }

    @Override
    protected boolean synchronizingFree() {
        return !borrowed && library == null;
    }

    @Override
    public String identity() {
        if (borrowed) {
            return "Module#" + id() + " (" + artifact + ", borrowed)";
        }
        if (library != null) {
            return "Module#" + id() + " (this context's view of " + library.identity() + ")";
        }
        return "Module#" + id() + " '" + name + "' (" + artifact + ", sha256 " + sha256.substring(0, 12) + ")";
    }
}
