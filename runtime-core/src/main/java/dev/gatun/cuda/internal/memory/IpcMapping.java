package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;

/**
 * Another process's allocation mapped into this one with {@code cuIpcOpenMemHandle}
 * ({@code DeviceBuffer.importFrom}): borrowed, and unmapped ({@code cuIpcCloseMemHandle}) once
 * this process's work on it completed; the exporter frees it after every importer unmapped it.
 */
public final class IpcMapping extends ImportedMemory {

    private IpcMapping(ContextState context, long address, long bytes) {
        super(context, address, bytes);
    }

    /**
     * Maps the allocation {@code driverHandle} (the 64 bytes of a {@code CUipcMemHandle}) names,
     * and checks that the mapping spans the {@code claimed} bytes its export said; a mapping
     * shorter than the claim is unmapped again (through this kind's own release) and refused
     * ({@link DeviceMemory#checkMapped}).
     *
     * @throws IllegalArgumentException when the claim exceeds what the driver mapped
     */
    public static IpcMapping open(ContextState context, byte[] driverHandle, long claimed) {
        long address;
        // cuIpcOpenMemHandle maps memory and may synchronize, like an allocation.
        try (var _ = context.enterSection("cuIpcOpenMemHandle")) {
            address = context.calls().ipc().openMemory(driverHandle);
        }
        return checked(new IpcMapping(context, address, claimed));
    }

    @Override
    public int free() {
        // Every fence of this process's work on the mapping completed; the memory is the
        // exporter's, which frees it after every importer unmapped it.
        return context.calls().ipc().closeMemory(address);
    }

    @Override
    public String identity() {
        return describe("imported");
    }
}
