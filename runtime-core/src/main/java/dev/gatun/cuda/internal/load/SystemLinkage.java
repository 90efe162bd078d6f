package dev.gatun.cuda.internal.load;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Loads libraries into this class loader with {@link System#load}, which is what the
 * generated bindings' {@code SymbolLookup.loaderLookup()} searches. A library found through
 * the dynamic loader is first opened by soname, then its real path is read back with
 * {@code dladdr} so that it can be registered the same way.
 */
public final class SystemLinkage implements Linkage {

    public static final SystemLinkage INSTANCE = new SystemLinkage();

    private SystemLinkage() {
    }

    @Override
    public Outcome loadFile(Path path) {
        try {
            // Safety: System.load maps an absolute path the caller chose; failure is an
            // UnsatisfiedLinkError, caught here and reported, never propagated.
            System.load(path.toString());
            return Outcome.loaded(path);
        } catch (UnsatisfiedLinkError | SecurityException e) {
            return Outcome.failed(e.getMessage());
        }
    }

    @Override
    public Outcome loadByName(String soname, String probeSymbol) {
        MemorySegment symbol;
        try {
            // Safety: dlopen by soname; the global arena keeps the handle open for the
            // process, as the driver must never be unloaded while handles from it exist.
            symbol = SymbolLookup.libraryLookup(soname, Arena.global()).find(probeSymbol).orElse(null);
        } catch (IllegalArgumentException e) {
            return Outcome.failed("not found (" + e.getMessage() + ")");
        }
        if (symbol == null) {
            return Outcome.failed("loaded, but it does not export " + probeSymbol);
        }
        Optional<Path> path = Dladdr.fileOf(symbol);
        if (path.isEmpty()) {
            return Outcome.failed("loaded, but dladdr could not tell which file it is");
        }
        return loadFile(path.get());
    }

    /** {@code dladdr(3)}: which mapped file holds an address. */
    private static final class Dladdr {
        // struct Dl_info { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; }
        private static final long DL_INFO_BYTES = 4 * ValueLayout.ADDRESS.byteSize();
        private static final MethodHandle DLADDR = Linker.nativeLinker().defaultLookup().find("dladdr")
                .map(address -> Linker.nativeLinker().downcallHandle(address,
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS)))
                .orElse(null);

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
                // Safety: dli_fname points at the loader's NUL-terminated copy of the path,
                // valid while the library stays mapped (for the process, via the global arena).
                String file = name.reinterpret(4096).getString(0);
                return Optional.of(Path.of(file).toAbsolutePath());
            } catch (Throwable t) {
                return Optional.empty();
            }
        }
    }
}
