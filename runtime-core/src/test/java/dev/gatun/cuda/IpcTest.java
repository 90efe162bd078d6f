package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Legacy IPC of device memory and events on the simulated driver, which lets one process play
 * exporter and importer (the real driver does not: the GPU suite runs two JVMs).
 */
class IpcTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Random random = new Random(13);

    private byte[] randomBytes(int n) {
        byte[] data = new byte[n];
        random.nextBytes(data);
        return data;
    }

    @Test
    void anExportedBufferImportsAsAMappingOfTheSameMemory() {
        byte[] data = randomBytes(4096);
        try (DeviceBuffer original = ctx.allocate(data.length)) {
            original.bytes().copyFrom(data);
            IpcBufferExport handle = IpcBufferExport.fromBytes(original.exportForIpc().toBytes());
            assertEquals(original.exportForIpc(), handle, "the bytes carry the whole handle");
            assertEquals(IpcBufferExport.Kind.MEMORY_HANDLE, handle.kind());
            assertEquals(handle, IpcBufferExport.fromBytes(handle.toBytes()), "read back as the same kind");
            assertEquals(data.length, handle.byteSize());
            int allocations = sim.gpu.liveDeviceAllocations();
            try (DeviceBuffer imported = DeviceBuffer.importFrom(ctx, handle)) {
                assertTrue(imported.isImported());
                assertFalse(original.isImported());
                assertEquals(data.length, imported.byteSize());
                assertNotEquals(original.address(), imported.address(), "mapped at its own address");
                assertEquals(1, sim.gpu.liveIpcMappings());
                assertEquals(allocations, sim.gpu.liveDeviceAllocations(), "a mapping allocates nothing");
                assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
                byte[] read = new byte[data.length];
                imported.bytes().copyTo(read);
                assertArrayEquals(data, read, "the importer reads the exporter's bytes");
                byte[] written = randomBytes(data.length);
                imported.bytes().copyFrom(written);
                original.bytes().copyTo(read);
                assertArrayEquals(written, read, "the exporter reads the importer's bytes");
            }
            assertEquals(0, sim.gpu.liveIpcMappings(), "closing the import unmaps it");
            assertEquals(allocations, sim.gpu.liveDeviceAllocations(), "and frees nothing of the exporter's");
        }
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void anImportClosedWhileWorkUsesItIsUnmappedAfterItsFenceAndNeverFreed() {
        try (DeviceBuffer original = ctx.allocate(1024); Stream s = ctx.createStream()) {
            DeviceBuffer imported = DeviceBuffer.importFrom(ctx, legacy(original));
            sim.faults.countCalls();
            sim.gpu.hold(s.handle());
            s.memset(imported.bytes(), (byte) 5);
            imported.close();
            assertEquals(1, sim.gpu.liveIpcMappings(), "queued work still uses the mapping");
            assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
            assertThrows(IllegalStateException.class, imported::address, "use after close");
            sim.gpu.release(s.handle());
            ctx.reap();
            assertEquals(0, sim.gpu.liveIpcMappings(), "unmapped once the memset's fence completed");
            assertEquals(1, sim.faults.calls("cuIpcCloseMemHandle"));
            assertEquals(0, sim.faults.calls("cuMemFree_v2"), "an import is never freed");
            byte[] read = new byte[1024];
            original.bytes().copyTo(read);
            byte[] fives = new byte[1024];
            Arrays.fill(fives, (byte) 5);
            assertArrayEquals(fives, read, "the importer's memset reached the exporter's memory");
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aBlockOfThePooledContextExportsWithTheRequestedSize() {
        ctx.close(); // the device's context reopens with its device pool on
        try (CudaContext pooled = sim.pooledContext()) {
            byte[] data = randomBytes(1000); // served from a larger size class: the block is a whole cuMemAlloc
            try (DeviceBuffer original = pooled.allocate(data.length)) {
                original.bytes().copyFrom(data);
                IpcBufferExport handle = legacy(original);
                assertEquals(data.length, handle.byteSize());
                try (DeviceBuffer imported = DeviceBuffer.importFrom(pooled, handle)) {
                    byte[] read = new byte[data.length];
                    imported.bytes().copyTo(read);
                    assertArrayEquals(data, read);
                }
            }
            pooled.reap();
            assertEquals(0, sim.gpu.liveIpcMappings());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void buffersThatCannotBeExportedAreRefusedBeforeAnyDriverCall() {
        try (Stream s = ctx.createStream(); MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                DeviceBuffer exportable = ctx.allocate(64)) {
            DeviceBuffer closed = ctx.allocate(64);
            closed.close();
            try (DeviceBuffer empty = ctx.allocate(0); DeviceBuffer ordered = s.allocate(64);
                    DeviceBuffer fromPool = pool.allocate(s, 64); DeviceBuffer imported = DeviceBuffer.importFrom(ctx, legacy(exportable))) {
                sim.faults.countCalls();
                refused(closed::exportForIpc, "is closed");
                refused(empty::exportForIpc, "0-byte buffer has no allocation to share");
                refused(ordered::exportForIpc, "stream-ordered allocation", "CudaContext.allocate");
                refused(fromPool::exportForIpc, "stream-ordered allocation", "CudaContext.allocate");
                refused(imported::exportForIpc, "imported from another process", "process that allocated it");
                assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
            }
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void handleBytesOfTheWrongShapeAreRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IpcBufferExport.fromBytes(new byte[64]));
        assertTrue(e.getMessage().contains("73 bytes from its toBytes()"), e.getMessage());
        byte[] sizeZero = new byte[IpcBufferExport.BYTES];
        sizeZero[0] = 1; // the legacy case
        e = assertThrows(IllegalArgumentException.class, () -> IpcBufferExport.fromBytes(sizeZero));
        assertTrue(e.getMessage().contains("a buffer of 0 bytes"), e.getMessage());
        byte[] noKind = new byte[IpcBufferExport.BYTES];
        noKind[0] = 3;
        noKind[IpcBufferExport.BYTES - 1] = 64;
        e = assertThrows(IllegalArgumentException.class, () -> IpcBufferExport.fromBytes(noKind));
        assertTrue(e.getMessage().contains("are not an IpcBufferExport"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> IpcEventHandle.fromBytes(new byte[72]));
        assertTrue(e.getMessage().contains("64 bytes"), e.getMessage());
    }

    @Test
    void anImportedEventSeesTheExportersRecordsAndIsItsOwnHandle() {
        try (Stream producer = ctx.createStream(); Stream consumer = ctx.createStream();
                DeviceBuffer b = ctx.allocate(256); Event exported = ctx.createInterprocessEvent()) {
            assertFalse(exported.isTiming());
            IpcEventHandle handle = IpcEventHandle.fromBytes(exported.exportForIpc().toBytes());
            int events = sim.gpu.liveEvents();
            Event imported = Event.importFrom(ctx, handle);
            assertTrue(imported.isImported());
            assertEquals(events + 1, sim.gpu.liveEvents(), "a new handle in the importing process");
            sim.gpu.hold(producer.handle());
            producer.memset(b.bytes(), (byte) 3);
            exported.record(producer);
            assertFalse(imported.query(), "the exporter's record has not run");
            consumer.waitFor(imported);
            assertEquals(1, sim.gpu.queuedOperations(consumer.handle()), "the consumer waits for the record");
            sim.gpu.release(producer.handle());
            assertTrue(imported.query(), "the record ran");
            assertEquals(0, sim.gpu.queuedOperations(consumer.handle()));
            sim.faults.countCalls();
            imported.close();
            ctx.reap();
            assertEquals(1, sim.faults.calls("cuEventDestroy_v2"), "closing the import destroys its own handle");
            assertTrue(exported.query(), "the exporter's event lives on");
        }
        ctx.reap();
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.EVENT));
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void eventsThatCannotBeExportedAreRefusedBeforeAnyDriverCall() {
        try (Event fence = ctx.createEvent(); Event timing = ctx.createTimingEvent(); Event ipc = ctx.createInterprocessEvent();
                Event imported = Event.importFrom(ctx, ipc.exportForIpc())) {
            Event closed = ctx.createInterprocessEvent();
            closed.close();
            sim.faults.countCalls();
            refused(fence::exportForIpc, "createInterprocessEvent()");
            refused(timing::exportForIpc, "createInterprocessEvent()");
            refused(imported::exportForIpc, "process that created it");
            refused(closed::exportForIpc, "is closed");
            assertEquals(0, sim.faults.totalCalls());
            assertThrows(IllegalArgumentException.class, () -> imported.elapsedMillis(ipc), "an imported event has no timing");
        }
    }

    @Test
    void aHandleOfNoLiveAllocationFailsWithTheDriversError() {
        IpcBufferExport stale;
        try (DeviceBuffer b = ctx.allocate(64)) {
            stale = legacy(b);
        }
        ctx.reap();
        CudaException e = assertThrows(CudaException.class, () -> DeviceBuffer.importFrom(ctx, stale));
        assertEquals("CUDA_ERROR_INVALID_VALUE", e.resultName());
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "nothing owned after a failed import");
    }

    private MemoryPool exportablePool() {
        return ctx.createMemoryPool(MemoryPoolOptions.defaults().withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR));
    }

    @Test
    void aPoolAllocationImportsThroughTheImportedPoolAndIsFreedBeforeTheExportersFree() {
        byte[] data = randomBytes(8192);
        try (Stream s = ctx.createStream(); MemoryPool pool = exportablePool()) {
            assertEquals(PoolExportHandle.POSIX_FILE_DESCRIPTOR, pool.exportHandle());
            DeviceBuffer original = pool.allocate(s, data.length);
            original.bytes().copyFrom(data);
            MemoryPool imported = MemoryPool.importFrom(ctx, pool.exportFileDescriptor()); // the pool first: the driver's order
            IpcBufferExport exported = IpcBufferExport.fromBytes(original.exportForIpc().toBytes());
            assertEquals(IpcBufferExport.Kind.POOL_ALLOCATION, exported.kind(), "a pool allocation exports through its pool");
            assertEquals(data.length, exported.byteSize());
            assertTrue(imported.isImported());
            imported.setAccess(ctx, MemoryAccess.READ_WRITE); // the importing process sets its own device's access
            assertEquals(MemoryAccess.READ_WRITE, imported.access(ctx));
            assertEquals(3, ctx.diagnostics().liveOwners(OwnerKind.MEMORY_POOL), "the default pool's view, the pool and its import");
            DeviceBuffer view = imported.importAllocation(exported);
            assertTrue(view.isImported());
            assertEquals(1, sim.gpu.liveIpcMappings());
            byte[] read = new byte[data.length];
            view.bytes().copyTo(read);
            assertArrayEquals(data, read, "the importer reads the exporter's bytes");
            assertEquals(new MemoryPoolCounters(1, 0, data.length), imported.counters());

            sim.faults.countCalls();
            sim.gpu.hold(s.handle());
            s.memset(view.bytes(), (byte) 9);
            imported.close(); // deferred: the import holds it
            view.close();
            assertEquals(1, sim.gpu.liveIpcMappings(), "queued work still uses the import");
            sim.gpu.release(s.handle());
            ctx.reap();
            assertEquals(0, sim.gpu.liveIpcMappings(), "freed once its fence completed");
            assertEquals(1, sim.faults.calls("cuMemFree_v2"), "an imported pool allocation is freed with cuMemFree");
            assertEquals(0, sim.faults.calls("cuIpcCloseMemHandle"));
            assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.MEMORY_POOL), "the imported pool destroyed after its import");
            assertEquals(1, sim.faults.calls("cuMemPoolDestroy"));
            original.bytes().copyTo(read);
            byte[] nines = new byte[data.length];
            Arrays.fill(nines, (byte) 9);
            assertArrayEquals(nines, read, "the importer's memset reached the exporter's memory");
            original.close(); // after the importer's free: the documented order
        }
        ctx.reap();
        assertEquals(0, sim.gpu.livePoolAllocations());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void poolsAndAllocationsThatCannotBeSharedAreRefusedBeforeAnyDriverCall() {
        try (Stream s = ctx.createStream(); MemoryPool plain = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                MemoryPool exportable = exportablePool(); MemoryPool imported = MemoryPool.importFrom(ctx, exportable.exportFileDescriptor());
                DeviceBuffer fromPlain = plain.allocate(s, 64); DeviceBuffer fromExportable = exportable.allocate(s, 64);
                DeviceBuffer fromDefault = s.allocate(64)) {
            MemoryPool deviceDefault = ctx.defaultMemoryPool();
            sim.faults.countCalls();
            refused(plain::exportFileDescriptor, "is not exportable", "withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR)");
            refused(deviceDefault::exportFileDescriptor, "is not exportable", "withExportHandle");
            refused(imported::exportFileDescriptor, "it was imported");
            refused(fromPlain::exportForIpc, "from a pool created without an export handle", "MemoryPoolOptions.withExportHandle");
            refused(fromDefault::exportForIpc, "from the device's default pool", "CudaContext.allocate");
            refused(() -> imported.allocate(s, 64), "cannot allocate", "importAllocation");
            byte[] someExport = new byte[IpcBufferExport.BYTES];
            someExport[0] = 2; // the pool case
            someExport[IpcBufferExport.BYTES - 1] = 64; // a 64-byte allocation
            refused(() -> exportable.importAllocation(IpcBufferExport.fromBytes(someExport)), "is not an imported pool");
            IllegalArgumentException wrongKind = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.importFrom(ctx, IpcBufferExport.fromBytes(someExport)));
            assertTrue(wrongKind.getMessage().contains("MemoryPool.importAllocation"), wrongKind.getMessage());
            byte[] legacyExport = someExport.clone();
            legacyExport[0] = 1; // the legacy case
            wrongKind = assertThrows(IllegalArgumentException.class,
                    () -> imported.importAllocation(IpcBufferExport.fromBytes(legacyExport)));
            assertTrue(wrongKind.getMessage().contains("DeviceBuffer.importFrom"), wrongKind.getMessage());
            assertThrows(IllegalArgumentException.class, () -> MemoryPool.importFrom(ctx, -1));
            assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aPoolAllocationIsRefusedBeforeItsPoolWasExported() {
        try (Stream s = ctx.createStream(); MemoryPool pool = exportablePool(); DeviceBuffer b = pool.allocate(s, 64)) {
            sim.faults.countCalls();
            refused(b::exportForIpc, "MemoryPool.exportFileDescriptor()", "first");
            assertEquals(0, sim.faults.totalCalls(), "refused before the driver, which refuses cuMemPoolExportPointer too");
            int fd = pool.exportFileDescriptor();
            assertEquals(IpcBufferExport.Kind.POOL_ALLOCATION, b.exportForIpc().kind(), "exportable once its pool was exported");
            assertTrue(fd >= 0);
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** {@code export}'s bytes with the size field (the last 8 bytes, big-endian) overwritten: a forged export. */
    private static byte[] withSize(IpcBufferExport export, long size) {
        byte[] bytes = export.toBytes();
        ByteBuffer.wrap(bytes).putLong(IpcBufferExport.BYTES - Long.BYTES, size);
        return bytes;
    }

    @Test
    void anExportWhoseSizeWasForgedIsRefusedAndLeavesNoMappingNorOwner() {
        try (DeviceBuffer original = ctx.allocate(16)) {
            IpcBufferExport forged = IpcBufferExport.fromBytes(withSize(original.exportForIpc(), 1 << 20));
            assertEquals(1 << 20, forged.byteSize(), "the bytes claim 1 MiB");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.importFrom(ctx, forged));
            for (String says : List.of("1048576 bytes", "16 bytes", "forged or corrupted")) {
                assertTrue(e.getMessage().contains(says), "'" + e.getMessage() + "' should say '" + says + "'");
            }
            ctx.reap();
            assertEquals(0, sim.gpu.liveIpcMappings(), "the mapping was unmapped");
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "only the original is live");
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements());

            IpcBufferExport shorter = IpcBufferExport.fromBytes(withSize(original.exportForIpc(), 8));
            try (DeviceBuffer honest = DeviceBuffer.importFrom(ctx, legacy(original));
                    DeviceBuffer prefix = DeviceBuffer.importFrom(ctx, shorter)) {
                assertEquals(16, honest.byteSize(), "an honest import still works");
                assertEquals(8, prefix.byteSize(), "a claim inside the mapping is a view of its start");
                assertEquals(2, sim.gpu.liveIpcMappings());
            }
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveIpcMappings());
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aPoolAllocationWhoseSizeWasForgedIsRefusedAndFreedThroughItsPool() {
        try (Stream s = ctx.createStream(); MemoryPool pool = exportablePool()) {
            MemoryPool imported = MemoryPool.importFrom(ctx, pool.exportFileDescriptor());
            DeviceBuffer original = pool.allocate(s, 16);
            IpcBufferExport forged = IpcBufferExport.fromBytes(withSize(original.exportForIpc(), 1 << 20));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> imported.importAllocation(forged));
            for (String says : List.of("1048576 bytes", "16 bytes", "forged or corrupted")) {
                assertTrue(e.getMessage().contains(says), "'" + e.getMessage() + "' should say '" + says + "'");
            }
            ctx.reap();
            assertEquals(0, sim.gpu.liveIpcMappings(), "the import was freed");
            assertEquals(new MemoryPoolCounters(1, 1, 0), imported.counters(), "mapped, then freed through its pool");
            try (DeviceBuffer honest = imported.importAllocation(original.exportForIpc())) {
                assertEquals(16, honest.byteSize(), "an honest import still works");
            }
            imported.close();
            original.close();
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveIpcMappings());
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** The export of a {@code ctx.allocate} buffer, which is always of the legacy kind. */
    private static IpcBufferExport legacy(DeviceBuffer b) {
        IpcBufferExport export = b.exportForIpc();
        assertEquals(IpcBufferExport.Kind.MEMORY_HANDLE, export.kind());
        return export;
    }

    private static void refused(Executable export, String... says) {
        IllegalStateException e = assertThrows(IllegalStateException.class, export);
        for (String s : says) {
            assertTrue(e.getMessage().contains(s), "'" + e.getMessage() + "' should say '" + s + "'");
        }
    }
}
