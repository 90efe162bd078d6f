package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;

/**
 * Another process's memory mapped into this one ({@code IpcBufferExport}): borrowed, and let go
 * of by the kind's own free once this process's work on it completed, never freed for the
 * exporter. The two ways in share everything but how the mapping is made and let go of:
 * {@link IpcMapping} ({@code cuIpcOpenMemHandle}) and {@link IpcPoolMapping}
 * ({@code cuMemPoolImportPointer}).
 */
public abstract sealed class ImportedMemory extends DeviceMemory implements Retirement.Release
        permits IpcMapping, IpcPoolMapping {

    ImportedMemory(ContextState context, long address, long bytes) {
        super(context, address, bytes, null);
    }

    /**
     * {@code mapping}, once it spans the bytes its export claimed; one shorter is let go of again
     * (through its own release) and refused ({@link DeviceMemory#checkMapped}).
     *
     * @throws IllegalArgumentException when the claim exceeds what the driver mapped
     */
    static <M extends ImportedMemory> M checked(M mapping) {
        mapping.checkMapped("IpcBufferExport");
        return mapping;
    }

    @Override
    public final boolean borrowed() {
        return true;
    }

    @Override
    protected final Retirement.Release howToFree() {
        return this;
    }

    @Override
    protected final boolean synchronizingFree() {
        return true; // neither cuIpcCloseMemHandle nor an imported allocation's cuMemFree is documented as never synchronizing
    }
}
