package dev.gatun.cuda;

import static dev.gatun.cuda.FillKernel.N;
import static dev.gatun.cuda.FillKernel.expected;
import static dev.gatun.cuda.FillKernel.poisoned;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Handles made by another library, on the simulated driver: a borrowed stream, device buffer or
 * kernel is validated before any use, fenced like Gatun's own, and never destroyed, freed or
 * unloaded by Gatun; a foreign context is accepted only when it is a device's primary context.
 * "The other library" here makes its handles through the simulated driver's controls, which no
 * fault plan sees, so the plan's counts are Gatun's calls alone.
 */
class ForeignHandlesTest {

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = sim.cuda.device(0).context(ContextOptions.defaults().withLeakTracking(true)
            .withDevicePool(new DevicePoolOptions(0, false)));
    private final MemorySegment primary = sim.gpu.primaryContext(0);

    ForeignHandlesTest() {
        FillKernel.load(sim, ctx); // fill(p, n, v): p[i] = v + i
    }

    @AfterEach
    void noViolations() {
        assertEquals(List.of(), sim.gpu.violations());
    }

    private void reapTwice() {
        ctx.reap();
        ctx.reap();
    }

    // ---- streams ----

    @Test
    void aBorrowedStreamRunsGatunWorkAndIsNeverDestroyed() {
        MemorySegment raw = sim.gpu.foreignStream(primary);
        int streams = sim.gpu.liveStreams();
        sim.faults.countCalls();
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N)) {
            Stream s = Stream.borrow(ctx, raw);
            assertTrue(s.isBorrowed());
            assertFalse(ctx.computeStream().isBorrowed());
            assertEquals(raw.address(), s.handle().address());
            assertEquals(3, ctx.diagnostics().liveOwners(OwnerKind.STREAM), "the context's two streams and the borrowed one");
            assertTrue(s.toString().contains("borrowed"), s.toString());
            b.asInts().copyFrom(poisoned());
            fill.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(11));
            int[] out = new int[N];
            b.asInts().copyTo(out);
            assertArrayEquals(expected(11), out);
            s.close();
            assertTrue(s.isClosed());
            assertThrows(IllegalStateException.class, s::handle);
        }
        reapTwice();
        assertEquals(0, sim.faults.calls("cuStreamDestroy_v2"), "Gatun destroyed another library's stream");
        assertEquals(1, sim.faults.calls("cuStreamGetCtx"));
        assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.STREAM));
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(streams, sim.gpu.liveStreams(), "the foreign stream is still alive");
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(raw), "its creator can still destroy it");
    }

    @Test
    void pseudoStreamsAreRefusedBeforeAnyDriverCall() {
        sim.faults.countCalls();
        for (MemorySegment pseudo : List.of(MemorySegment.NULL, CudaDriver.CU_STREAM_LEGACY(),
                CudaDriver.CU_STREAM_PER_THREAD())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Stream.borrow(ctx, pseudo));
            assertTrue(e.getMessage().contains("cannot borrow"), e.getMessage());
        }
        assertEquals(0, sim.faults.totalCalls());
        assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.STREAM));
    }

    @Test
    void aStreamOfAnotherContextIsRefusedAndAnInvalidOneFailsWithTheDriversError() {
        MemorySegment other = sim.gpu.foreignStream(sim.gpu.foreignContext(0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Stream.borrow(ctx, other));
        assertTrue(e.getMessage().contains("belongs to context"), e.getMessage());
        MemorySegment ofDevice1 = sim.gpu.foreignStream(sim.gpu.primaryContext(1));
        assertThrows(IllegalArgumentException.class, () -> Stream.borrow(ctx, ofDevice1));
        CudaException invalid = assertThrows(CudaException.class, () -> Stream.borrow(ctx, MemorySegment.ofAddress(0x7777)));
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_HANDLE(), invalid.result());
        assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.STREAM), "nothing was wrapped");
        assertFalse(ctx.diagnostics().poisonedBy().isPresent());
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(other));
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(ofDevice1));
    }

    @Test
    void aSynchronousReadOrdersAfterGatunWorkStillRunningOnABorrowedStream() {
        MemorySegment raw = sim.gpu.foreignStream(primary);
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N);
                Stream s = Stream.borrow(ctx, raw)) {
            b.asInts().copyFrom(poisoned());
            sim.gpu.hold(raw); // the kernel is still running when the buffer is read
            fill.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(-5));
            int[] out = new int[N];
            b.asInts().copyTo(out);
            assertArrayEquals(expected(-5), out, "the read returned before the kernel on the borrowed stream finished");
            sim.gpu.release(raw); // the read waited only up to its fence; the GPU goes on with the rest
        }
        reapTwice();
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(raw));
    }

    @Test
    void aSynchronousReadOrdersAfterWorkTheOtherLibraryQueuedOnTheBorrowedStream() {
        MemorySegment raw = sim.gpu.foreignStream(primary);
        try (DeviceBuffer b = ctx.allocate(4L * N); Stream s = Stream.borrow(ctx, raw)) {
            assertTrue(s.isBorrowed());
            b.asInts().copyFrom(poisoned());
            sim.gpu.hold(raw);
            // The other library's memset, straight to the driver: Gatun never sees it queued.
            assertEquals(FakeDriverApi.SUCCESS, sim.gpu.api().cuMemsetD32Async(b.address(), 77, N, raw));
            int[] out = new int[N];
            b.asInts().copyTo(out);
            int[] sevens = new int[N];
            Arrays.fill(sevens, 77);
            assertArrayEquals(sevens, out, "the read returned before the other library's work on the borrowed stream");
            sim.gpu.release(raw); // the read waited only up to its fence; the GPU goes on with the rest
        }
        reapTwice();
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(raw));
    }

    @Test
    void closingABorrowedStreamWithQueuedWorkForgetsItOnlyOnceTheWorkCompleted() {
        MemorySegment raw = sim.gpu.foreignStream(primary);
        sim.faults.countCalls();
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N)) {
            Stream s = Stream.borrow(ctx, raw);
            sim.gpu.hold(raw);
            fill.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(3));
            s.close();
            reapTwice();
            assertEquals(1, ctx.diagnostics().counters().pendingRetirements(), "the view waits for its final fence");
            assertEquals(2, sim.gpu.queuedOperations(raw), "the launch and the final fence are still queued");
            sim.gpu.release(raw);
            reapTwice();
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
            int[] out = new int[N];
            b.asInts().copyTo(out);
            assertArrayEquals(expected(3), out);
        }
        reapTwice();
        assertEquals(0, sim.faults.calls("cuStreamDestroy_v2"));
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(raw));
    }

    // ---- device memory ----

    @Test
    void borrowedDeviceMemoryIsCopiedAndLaunchedOnAndNeverFreed() {
        long base = sim.gpu.foreignDeviceMemory(primary, 4096);
        int allocations = sim.gpu.liveDeviceAllocations();
        sim.faults.countCalls();
        try (Kernel fill = ctx.modules().kernel("m", "fill"); Stream s = ctx.createStream()) {
            DeviceBuffer b = DeviceBuffer.borrow(ctx, base + 256, 4L * N);
            assertTrue(b.isBorrowed());
            assertEquals(base + 256, b.address());
            assertEquals(4L * N, b.byteSize());
            assertTrue(b.toString().contains("borrowed"), b.toString());
            b.asInts().copyFrom(poisoned());
            fill.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(100));
            try (DeviceBuffer copy = ctx.allocate(4L * N)) {
                s.copy(copy.asInts(), b.asInts());
                int[] out = new int[N];
                copy.asInts().copyTo(out);
                assertArrayEquals(expected(100), out);
            }
            b.close();
            assertThrows(IllegalStateException.class, b::address);
        }
        reapTwice();
        assertEquals(1, sim.faults.calls("cuMemFree_v2") + sim.faults.calls("cuMemFreeAsync"),
                "one free: the buffer Gatun allocated for the copy, never the borrowed memory");
        assertEquals(allocations, sim.gpu.liveDeviceAllocations(), "the borrowed allocation is still there");
        assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.freeForeignDeviceMemory(base), "its allocator can still free it");
    }

    @Test
    void closingBorrowedMemoryWhileGatunWorkIsQueuedWaitsForThatWork() {
        long base = sim.gpu.foreignDeviceMemory(primary, 4L * N);
        try (Stream s = ctx.createStream()) {
            DeviceBuffer b = DeviceBuffer.borrow(ctx, base, 4L * N);
            sim.gpu.hold(s.state().handle());
            s.memset(b.bytes(), (byte) 0x11);
            b.close();
            reapTwice();
            assertEquals(1, ctx.diagnostics().counters().pendingRetirements(), "the view waits for the memset");
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "closed (no longer live), though not yet retired");
            sim.gpu.release(s.state().handle());
            reapTwice();
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        }
        byte[] written = sim.gpu.deviceBytes(base, 4 * N);
        byte[] ones = new byte[4 * N];
        Arrays.fill(ones, (byte) 0x11);
        assertArrayEquals(ones, written, "the memset ran on the memory, which is still allocated");
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.freeForeignDeviceMemory(base));
    }

    @Test
    void memoryThatIsNotDeviceMemoryOfThisContextOrRunsPastItsAllocationIsRefused() {
        long base = sim.gpu.foreignDeviceMemory(primary, 4096);
        long otherContext = sim.gpu.foreignDeviceMemory(sim.gpu.foreignContext(0), 4096);
        long device1 = sim.gpu.foreignDeviceMemory(sim.gpu.primaryContext(1), 4096);
        sim.faults.countCalls();
        for (Executable bad : List.<Executable>of(() -> DeviceBuffer.borrow(ctx, base, 0),
                () -> DeviceBuffer.borrow(ctx, base, -1), () -> DeviceBuffer.borrow(ctx, 0, 16),
                () -> DeviceBuffer.borrow(ctx, -16, 32))) {
            assertThrows(IllegalArgumentException.class, bad);
        }
        assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
        try (PinnedBuffer host = ctx.allocatePinned(64)) {
            assertRefused("not device memory", () -> DeviceBuffer.borrow(ctx, host.segment().address(), 64));
        }
        assertRefused("no CUDA allocation", () -> DeviceBuffer.borrow(ctx, 0x10, 64));
        assertRefused("spans only 4096 bytes", () -> DeviceBuffer.borrow(ctx, base + 4000, 97));
        assertRefused("not in device 0's primary context", () -> DeviceBuffer.borrow(ctx, otherContext, 64));
        assertRefused("allocated on device 1", () -> DeviceBuffer.borrow(ctx, device1, 64));
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "nothing was wrapped");
        try (DeviceBuffer whole = DeviceBuffer.borrow(ctx, base + 4000, 96)) {
            assertEquals(96, whole.byteSize(), "the last bytes of the allocation");
        }
        for (long a : new long[] {base, otherContext, device1}) {
            assertEquals(FakeDriverApi.SUCCESS, sim.gpu.freeForeignDeviceMemory(a));
        }
    }

    @Test
    void memoryPoolAllocationsOfThisDeviceCanBeBorrowed() {
        try (Stream s = ctx.createStream(); MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                DeviceBuffer owned = pool.allocate(s, 1 << 20);
                DeviceBuffer view = DeviceBuffer.borrow(ctx, owned.address(), 1 << 20)) {
            view.asInts().slice(0, N).copyFrom(expected(9));
            int[] out = new int[N];
            owned.asInts().slice(0, N).copyTo(out);
            assertArrayEquals(expected(9), out);
        }
    }

    private static void assertRefused(String why, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(why), () -> "expected '" + why + "' in: " + e.getMessage());
    }

    // ---- modules ----

    @Test
    void aKernelOfAForeignModuleLaunchesAndTheModuleIsNeverUnloaded() {
        MemorySegment module = sim.gpu.foreignModule(Ptx.module("fill", "u64", "u32", "u32"));
        int modules = sim.gpu.liveModules();
        sim.faults.countCalls();
        try (DeviceBuffer b = ctx.allocate(4L * N); Stream s = ctx.createStream()) {
            Kernel k = Kernel.borrow(ctx, module, "fill");
            assertTrue(k.isBorrowed());
            assertEquals(module.address(), k.moduleHandle().address());
            assertEquals("", k.moduleSha256());
            b.asInts().copyFrom(poisoned());
            k.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(42));
            int[] out = new int[N];
            b.asInts().copyTo(out);
            assertArrayEquals(expected(42), out);
            k.close();
            assertThrows(IllegalStateException.class, k::handle);
        }
        reapTwice();
        assertEquals(0, sim.faults.calls("cuModuleUnload"), "Gatun unloaded another library's module");
        assertEquals(modules, sim.gpu.liveModules());
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.MODULE), "the registry's module only");
        assertRefused("has no kernel 'missing'", () -> Kernel.borrow(ctx, module, "missing"));
        assertRefused("NULL module", () -> Kernel.borrow(ctx, MemorySegment.NULL, "fill"));
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.KERNEL));
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.unloadForeignModule(module));
    }

    @Test
    void gatunsOwnKernelHandsOutItsFunctionAndModule() {
        try (Kernel k = ctx.modules().kernel("m", "fill")) {
            assertFalse(k.isBorrowed());
            assertTrue(k.handle().address() != 0);
            assertTrue(k.moduleHandle().address() != 0);
            k.close();
            assertThrows(IllegalStateException.class, k::moduleHandle);
        }
    }

    // ---- the lifecycle ----

    @Test
    void borrowedOwnersAreListedAsBorrowedAndKeepTheContextOpen() {
        MemorySegment raw = sim.gpu.foreignStream(primary);
        long base = sim.gpu.foreignDeviceMemory(primary, 256);
        Stream s = Stream.borrow(ctx, raw);
        DeviceBuffer b = DeviceBuffer.borrow(ctx, base, 256);
        List<LiveOwner> borrowed = ctx.diagnostics().liveOwners().stream().filter(LiveOwner::borrowed).toList();
        assertEquals(List.of(OwnerKind.STREAM, OwnerKind.DEVICE_BUFFER), borrowed.stream().map(LiveOwner::kind).toList());
        assertEquals(List.of(s.toString(), b.toString()), borrowed.stream().map(LiveOwner::identity).toList());
        assertTrue(ctx.diagnostics().liveOwners().stream().filter(o -> !o.borrowed()).count() >= 2, "the context's own are not borrowed");
        IllegalStateException open = assertThrows(IllegalStateException.class, ctx::close);
        assertTrue(open.getMessage().contains("1 STREAM") && open.getMessage().contains("1 DEVICE_BUFFER"),
                open.getMessage());
        b.close();
        s.close();
        ctx.close();
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(raw), "the context's close left it alone");
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.freeForeignDeviceMemory(base));
    }

    @Test
    void borrowedMeansOneThingForEveryKindOfOwner() throws Exception {
        MemorySegment rawStream = sim.gpu.foreignStream(primary);
        long base = sim.gpu.foreignDeviceMemory(primary, 256);
        MemorySegment module = sim.gpu.foreignModule(Ptx.module("fill", "u64", "u32", "u32"));
        try (Stream stream = ctx.createStream(); DeviceBuffer exported = ctx.allocate(256);
                MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults()
                        .withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR));
                MemoryPool importedPool = MemoryPool.importFrom(ctx, pool.exportFileDescriptor());
                DeviceBuffer pooled = pool.allocate(stream, 256); Kernel own = ctx.modules().kernel("m", "fill");
                Event event = ctx.createInterprocessEvent()) {
            // What Gatun did not make: another library's stream, memory and kernel, another process's memory.
            Stream s = Stream.borrow(ctx, rawStream);
            DeviceBuffer b = DeviceBuffer.borrow(ctx, base, 256);
            Kernel k = Kernel.borrow(ctx, module, "fill");
            DeviceBuffer mapped = DeviceBuffer.importFrom(ctx, exported.exportForIpc());
            DeviceBuffer poolMapped = importedPool.importAllocation(pooled.exportForIpc());
            Event importedEvent = Event.importFrom(ctx, event.exportForIpc());
            for (boolean borrowed : List.of(s.isBorrowed(), b.isBorrowed(), k.isBorrowed(), mapped.isBorrowed(),
                    poolMapped.isBorrowed())) {
                assertTrue(borrowed, "isBorrowed() of each");
            }
            for (boolean borrowed : List.of(stream.isBorrowed(), exported.isBorrowed(), pooled.isBorrowed(),
                    own.isBorrowed())) {
                assertFalse(borrowed, "isBorrowed() of Gatun's own");
            }
            List<LiveOwner> borrowed = ctx.diagnostics().liveOwners().stream().filter(LiveOwner::borrowed).toList();
            assertEquals(List.of(s.toString(), b.toString(), k.toString(), mapped.toString(), poolMapped.toString()),
                    borrowed.stream().filter(o -> o.kind() != OwnerKind.MODULE).map(LiveOwner::identity).toList(),
                    "liveOwners() says borrowed of the same owners, the borrowed kernel included");
            assertEquals(1, borrowed.stream().filter(o -> o.kind() == OwnerKind.MODULE).count(), "and its module");
            assertTrue(k.toString().contains("CUmodule 0x" + Long.toHexString(module.address())), k.toString());
            assertFalse(ctx.diagnostics().liveOwners().stream().anyMatch(o -> o.borrowed() && (o.identity().equals(importedPool.toString())
                    || o.identity().equals(importedEvent.toString()))), "an imported pool or event is this process's own handle");
            for (AutoCloseable c : List.of(poolMapped, mapped, k, b, s, importedEvent)) {
                c.close();
            }
        }
        reapTwice();
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(rawStream));
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.freeForeignDeviceMemory(base));
        assertEquals(FakeDriverApi.SUCCESS, sim.gpu.unloadForeignModule(module));
    }

    // ---- contexts ----

    @Test
    void aForeignPrimaryContextIsGatunsContextAndAnyOtherContextIsRefused() throws Throwable {
        assertSame(ctx, sim.cuda.contextOf(primary));
        assertEquals(primary.address(), ctx.handle().address());
        assertRefused("not device 0's primary context", () -> sim.cuda.contextOf(sim.gpu.foreignContext(0)));
        assertRefused("NULL context", () -> sim.cuda.contextOf(MemorySegment.NULL));
        CudaException invalid = assertThrows(CudaException.class, () -> sim.cuda.contextOf(MemorySegment.ofAddress(0x55)));
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_CONTEXT(), invalid.result());
        CudaContext device1 = sim.cuda.contextOf(sim.gpu.primaryContext(1));
        assertSame(sim.cuda.device(1).context(), device1);
        device1.close();
    }

    @Test
    void askingForAContextsDeviceRestoresTheThreadsCurrentContext() throws Throwable {
        MemorySegment other = sim.gpu.foreignContext(1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(8);
            assertEquals(0, sim.gpu.api().cuCtxSetCurrent(other));
            assertRefused("not device 1's primary context", () -> sim.cuda.contextOf(other));
            assertEquals(0, sim.gpu.api().cuCtxGetCurrent(out));
            assertEquals(other.address(), out.get(ValueLayout.JAVA_LONG, 0), "the other library's context is current again");
            sim.cuda.contextOf(primary);
            assertEquals(0, sim.gpu.api().cuCtxGetCurrent(out));
            assertEquals(other.address(), out.get(ValueLayout.JAVA_LONG, 0));
        }
    }
}
