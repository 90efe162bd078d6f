package dev.gatun.cuda.internal.load;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The C library's dynamic loader functions, for what {@link java.lang.foreign.SymbolLookup}
 * does not tell: which file a library was mapped from ({@code dladdr}), and why a library could
 * not be opened ({@code dlerror}; the JDK's exception only says "Cannot open library").
 * Diagnosis only: when a function is missing from the C library, the answer is empty.
 */
final class DynamicLoader {

    // From <dlfcn.h>: resolve symbols when first called, as the JDK does.
    private static final int RTLD_LAZY = 1;
    // struct Dl_info { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; }
    private static final long DL_INFO_BYTES = 4 * ValueLayout.ADDRESS.byteSize();
    // Longer than any path the loader can name (PATH_MAX is 4096) plus its reason.
    private static final long MAX_STRING_BYTES = 16 * 1024;

    private static final MethodHandle DLADDR = function("dladdr",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    private static final MethodHandle DLOPEN = function("dlopen",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle DLERROR = function("dlerror", FunctionDescriptor.of(ValueLayout.ADDRESS));
    private static final MethodHandle DLCLOSE = function("dlclose",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));

    private DynamicLoader() {
    }

    private static MethodHandle function(String name, FunctionDescriptor descriptor) {
        Linker linker = Linker.nativeLinker();
        // Safety: each descriptor is the function's prototype in <dlfcn.h> on LP64 Linux.
        return linker.defaultLookup().find(name).map(address -> linker.downcallHandle(address, descriptor))
                .orElse(null);
    }

    /** The file that holds {@code symbol}, as the dynamic loader mapped it. */
    static Optional<Path> fileOf(MemorySegment symbol) {
        if (DLADDR == null) {
            return Optional.empty();
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = arena.allocate(DL_INFO_BYTES, ValueLayout.ADDRESS.byteAlignment());
            // Safety: info is a zeroed Dl_info-sized buffer that lives across the call;
            // dladdr only writes into it and returns 0 when the address is unknown.
            int found = (int) DLADDR.invokeExact(symbol, info);
            MemorySegment name = info.get(ValueLayout.ADDRESS, 0);
            if (found == 0 || name.equals(MemorySegment.NULL)) {
                return Optional.empty();
            }
            // Safety: dli_fname points at the loader's NUL-terminated copy of the path, valid
            // while the library stays mapped (for the process: it was opened in the global arena).
            return Optional.of(Path.of(name.reinterpret(MAX_STRING_BYTES).getString(0)).toAbsolutePath());
        } catch (Throwable t) {
            // Diagnosis only: the caller reports that the file could not be told.
            return Optional.empty();
        }
    }

    /**
     * Why the dynamic loader refuses {@code library} (a path or a soname), in its own words
     * ("invalid ELF header", "cannot open shared object file"). Empty when it does not refuse
     * it now, or when the C library does not say.
     */
    static Optional<String> whyNotLoadable(String library) {
        if (DLOPEN == null || DLERROR == null || DLCLOSE == null) {
            return Optional.empty();
        }
        try (Arena arena = Arena.ofConfined()) {
            // Safety: called only after the JVM failed to open the same library, so this dlopen
            // fails too and maps nothing; the name is a NUL-terminated copy alive for the call.
            MemorySegment handle = (MemorySegment) DLOPEN.invokeExact(arena.allocateFrom(library), RTLD_LAZY);
            if (!handle.equals(MemorySegment.NULL)) {
                // Safety: the handle was just returned by dlopen and is closed exactly once; a
                // failure to close leaves one more reference to a library that stays mapped anyway.
                int ignored = (int) DLCLOSE.invokeExact(handle);
                return Optional.empty();
            }
            // Safety: dlerror describes this thread's last dlopen failure, the one just above,
            // as a NUL-terminated string valid until the next dl* call on this thread.
            MemorySegment reason = (MemorySegment) DLERROR.invokeExact();
            return reason.equals(MemorySegment.NULL) ? Optional.empty()
                    : Optional.of(reason.reinterpret(MAX_STRING_BYTES).getString(0));
        } catch (Throwable t) {
            // Diagnosis only: the caller falls back to the JDK's own message.
            return Optional.empty();
        }
    }
}
