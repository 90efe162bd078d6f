package dev.gatun.cuda.internal.nvtx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * What an NVTX client hands a tool, in native memory for the life of the process (the tool may
 * keep any of these pointers): the export tables its {@code nvtxGetExportTable} returns, and for
 * each callback module a function table, an array of pointers to function-pointer slots, as
 * {@code nvtxImpl.h} lays out {@code nvtxGlobals_t}. The tool fills the slots it implements
 * while its {@code InitializeInjectionNvtx2} runs; an untouched slot stays null, which means
 * "not implemented: do nothing", as the header's {@code nvtxSetInitFunctionsToNoops} leaves it.
 *
 * <p>The three functions of the protocol ({@code nvtxGetExportTable}, the callbacks table's
 * {@code GetModuleFunctionTable} and the version table's {@code SetInjectionNvtxVersion}) are
 * upcall stubs into this object. An upcall must never throw (the JVM would die), so each one
 * answers a bad request as the header does, with null or 0, and touches only memory the tool
 * passed for that purpose.
 */
final class ExportTables {

    private static final long POINTER = ADDRESS.byteSize();

    private final MemorySegment callbacks;
    private final MemorySegment versionInfo;
    /** Per module: its table (entry 0 and the entry after the last slot null, as in the header). */
    private final MemorySegment[] tables = new MemorySegment[NvtxAbi.MODULE_COUNT];
    /** Per module: its slots, one function pointer per callback id, null until the tool fills one. */
    private final MemorySegment[] slots = new MemorySegment[NvtxAbi.MODULE_COUNT];
    private final MemorySegment getExportTable;
    private volatile int toolVersion = -1;

    /** Builds the tables and the upcall stubs in {@code arena}, which must live as long as the process. */
    ExportTables(Arena arena) {
        for (int module = 1; module < NvtxAbi.MODULE_COUNT; module++) {
            int count = NvtxAbi.SLOTS[module];
            MemorySegment moduleSlots = arena.allocate(ADDRESS, count); // zeroed: every slot "not implemented"
            MemorySegment table = arena.allocate(ADDRESS, count + 1L);
            for (int id = 1; id < count; id++) {
                table.setAtIndex(ADDRESS, id, moduleSlots.asSlice(id * POINTER, POINTER));
            }
            slots[module] = moduleSlots;
            tables[module] = table;
        }
        Linker linker = Linker.nativeLinker();
        MemorySegment getModuleFunctionTable = upcall(linker, arena, "getModuleFunctionTable",
                MethodType.methodType(int.class, int.class, MemorySegment.class, MemorySegment.class),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        MemorySegment setInjectionNvtxVersion = upcall(linker, arena, "setInjectionNvtxVersion",
                MethodType.methodType(void.class, int.class), FunctionDescriptor.ofVoid(JAVA_INT));
        this.getExportTable = upcall(linker, arena, "exportTable", MethodType.methodType(MemorySegment.class, int.class),
                FunctionDescriptor.of(ADDRESS, JAVA_INT));
        this.callbacks = arena.allocate(NvtxAbi.CALLBACKS);
        callbacks.set(JAVA_LONG, 0, NvtxAbi.CALLBACKS.byteSize());
        callbacks.set(ADDRESS, 8, getModuleFunctionTable);
        this.versionInfo = arena.allocate(NvtxAbi.VERSION_INFO);
        versionInfo.set(JAVA_LONG, 0, NvtxAbi.VERSION_INFO.byteSize());
        versionInfo.set(JAVA_INT, 8, NvtxAbi.VERSION);
        versionInfo.set(ADDRESS, 16, setInjectionNvtxVersion);
    }

    private MemorySegment upcall(Linker linker, Arena arena, String method, MethodType type,
            FunctionDescriptor descriptor) {
        try {
            MethodHandle target = MethodHandles.lookup().findVirtual(ExportTables.class, method, type).bindTo(this);
            // Safety: each descriptor is the C prototype in nvtxTypes.h of the function the stub
            // stands for, and each target catches everything (an exception would end the JVM).
            return linker.upcallStub(target, descriptor, arena);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /** The client's {@code nvtxGetExportTable}, to hand to the tool's {@code InitializeInjectionNvtx2}. */
    MemorySegment getExportTable() {
        return getExportTable;
    }

    /** {@code nvtxGetExportTable(exportTableId)}: the table, or null for an id the client does not know. */
    private MemorySegment exportTable(int id) {
        return switch (id) {
            case NvtxAbi.ETID_CALLBACKS -> callbacks;
            case NvtxAbi.ETID_VERSIONINFO -> versionInfo;
            default -> MemorySegment.NULL;
        };
    }

    /**
     * {@code GetModuleFunctionTable(module, out_table, out_size)}: 1 with the module's table and its
     * slot count written where the tool asked (either pointer may be null), 0 for an unknown module.
     */
    private int getModuleFunctionTable(int module, MemorySegment outTable, MemorySegment outSize) {
        try {
            if (module < 1 || module >= NvtxAbi.MODULE_COUNT) {
                return 0;
            }
            if (!outTable.equals(MemorySegment.NULL)) {
                // Safety: the tool passes the address of an NvtxFunctionTable (one pointer) to fill.
                outTable.reinterpret(POINTER).set(ADDRESS, 0, tables[module]);
            }
            if (!outSize.equals(MemorySegment.NULL)) {
                // Safety: the tool passes the address of an unsigned int to fill.
                outSize.reinterpret(JAVA_INT.byteSize()).set(JAVA_INT, 0, NvtxAbi.SLOTS[module]);
            }
            return 1;
        } catch (Throwable t) {
            return 0; // never reached for the pointers a tool passes; an upcall must not throw
        }
    }

    /** {@code SetInjectionNvtxVersion(version)}: the header ignores it; kept for the log line. */
    private void setInjectionNvtxVersion(int version) {
        toolVersion = version;
    }

    /** The NVTX version the tool said it implements, or -1 when it did not say. */
    int toolVersion() {
        return toolVersion;
    }

    /** The function pointer the tool left in {@code module}'s slot {@code id}: NULL when it implements none. */
    MemorySegment slot(int module, int id) {
        return slots[module].getAtIndex(ADDRESS, id);
    }

    /** How many of {@code module}'s slots the tool filled. */
    int filled(int module) {
        int n = 0;
        for (int id = 1; id < NvtxAbi.SLOTS[module]; id++) {
            if (!slot(module, id).equals(MemorySegment.NULL)) {
                n++;
            }
        }
        return n;
    }
}
