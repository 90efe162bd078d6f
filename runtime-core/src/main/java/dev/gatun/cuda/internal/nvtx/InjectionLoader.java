package dev.gatun.cuda.internal.nvtx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVTX load sequence of {@code nvtxDetail/nvtxInit.h} (load sequence version 2), in Java: the
 * client reads {@code NVTX_INJECTION64_PATH}; unset, no tool is attached and every NVTX call does
 * nothing. Set, the client opens that library ({@code dlopen(path, RTLD_LAZY)}), finds its
 * {@code InitializeInjectionNvtx2} and calls it with the client's {@code nvtxGetExportTable};
 * through it the tool asks for each module's function table and fills the slots it implements.
 * A nonzero answer attaches the tool; any failure leaves every call a no-op and closes the
 * library, as the header does (its failures are silent unless built with
 * {@code NVTX_DEBUG_PRINT}; here they are one WARN line, since the user set the variable).
 *
 * <p>The header's other sources of a tool are left out, as they do not apply to a JVM: the
 * pre-injected {@code InitializeInjectionNvtx2Preinject} lookup is disabled in the header itself
 * ({@code NVTX_SUPPORT_ALREADY_INJECTED_LIBRARY} is 0 on every platform), the Android package
 * path is for Android, and the static injection's weak symbol
 * ({@code InitializeInjectionNvtx2_fnptr}) exists only in a program linked with the tool, which
 * the {@code java} launcher is not.
 */
final class InjectionLoader {

    private static final Logger LOG = LoggerFactory.getLogger(InjectionLoader.class);

    /** {@code nvtxInit.h}: the variable a tool sets in a 64-bit process. */
    static final String VARIABLE = "NVTX_INJECTION64_PATH";
    private static final String ENTRY_POINT = "InitializeInjectionNvtx2";
    /** {@code NvtxInitializeInjectionNvtxFunc_t} (nvtxTypes.h): {@code int (*)(NvtxGetExportTableFunc_t)}. */
    private static final FunctionDescriptor INITIALIZE = FunctionDescriptor.of(JAVA_INT, ADDRESS);

    private InjectionLoader() {
    }

    /**
     * Runs the load sequence for {@code path}, the value of {@value #VARIABLE}.
     *
     * @return the tables the attached tool filled; empty when the variable is unset or the tool
     *     could not be attached (logged)
     */
    static Optional<ExportTables> attach(String path) {
        if (path == null) {
            return Optional.empty();
        }
        // Shared, not global: closing it unloads a library that failed to attach, as the
        // header's NVTX_DLLCLOSE does. A library that attached is never closed.
        Arena library = Arena.ofShared();
        boolean attached = false;
        try {
            SymbolLookup symbols;
            try {
                // Safety: the path is handed to the dynamic loader as the header hands it
                // (dlopen with RTLD_LAZY): a bare name is searched for as dlopen searches.
                symbols = SymbolLookup.libraryLookup(path, library);
            } catch (IllegalArgumentException e) {
                LOG.warn("{}={} could not be loaded ({}); NVTX calls do nothing in this process", VARIABLE, path,
                        e.getMessage());
                return Optional.empty();
            }
            Optional<MemorySegment> entry = symbols.find(ENTRY_POINT);
            if (entry.isEmpty()) {
                LOG.warn("{}={} exports no {}: it is not an NVTX injection library; NVTX calls do nothing in this "
                        + "process", VARIABLE, path, ENTRY_POINT);
                return Optional.empty();
            }
            // The tables live as long as the process: the tool keeps their pointers.
            ExportTables tables = new ExportTables(Arena.global());
            // Safety: the entry point has the prototype nvtxTypes.h gives it, and the export
            // table function it gets is an upcall stub that lives for the process.
            MethodHandle initialize = Linker.nativeLinker().downcallHandle(entry.get(), INITIALIZE);
            int status = (int) initialize.invokeExact(tables.getExportTable());
            if (status == 0) {
                LOG.warn("{}={}: its {} returned 0 (the tool declined to attach); NVTX calls do nothing in this "
                        + "process", VARIABLE, path, ENTRY_POINT);
                return Optional.empty();
            }
            attached = true;
            LOG.debug("NVTX tool attached from {}={} (NVTX version {}; {} CORE and {} CORE2 functions)", VARIABLE,
                    path, tables.toolVersion(), tables.filled(NvtxAbi.MODULE_CORE), tables.filled(NvtxAbi.MODULE_CORE2));
            return Optional.of(tables);
        } catch (Throwable t) {
            LOG.warn("{}={}: attaching the NVTX tool failed ({}); NVTX calls do nothing in this process", VARIABLE,
                    path, t.toString());
            return Optional.empty();
        } finally {
            if (!attached) {
                library.close();
            }
        }
    }
}
