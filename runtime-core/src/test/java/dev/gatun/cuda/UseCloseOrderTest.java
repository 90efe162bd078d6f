package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A use of an owner on one stream racing its close on another thread (concurrency review
 * 2026-12-06, section 3.1), forced at the protocol's own step: thread T1 is held at
 * {@link SwitchPoint#USAGE_ADD}, after its owner's open checks passed and just before it lists
 * its stream among the owner's uses; T2 closes the owner and returns (asserted: the forced order
 * happened); then T1 goes on. A use and a close are a Dekker pair (NativeResource.usedOn): T1
 * lists its stream, then reads the close, so it is refused. On 9e28154, which read the close
 * before listing, T1 queued its work after the close had freed the memory (in the stream order
 * of the only stream it saw), and the next allocation could stand the same object and address
 * for another buffer.
 */
class UseCloseOrderTest {

    private static final int N = 4;

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);

    @AfterEach
    void releaseSwitchPoints() {
        Interposer.releaseSwitchPoints();
    }

    /** Loads {@code add(p, n, v)} (p[i] += v) into {@code ctx} as module "m". */
    private Kernel addKernel(CudaContext ctx) {
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        return ctx.modules().kernel("m", "add");
    }

    /** {@code add(b, N, 1)}, prepared: b[i] += 1. */
    private static KernelLaunch addOne(Kernel add, DeviceBuffer b) {
        return add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(1));
    }

    /**
     * Runs {@code use} on T1, held just before it lists its stream; runs {@code close} on T2 to
     * its end meanwhile (asserted); lets T1 go; returns what T1 threw (null if it queued its work).
     */
    private Throwable useHeldWhileClosed(Background.Step use, Background.Step close) {
        Interposer.Stop beforeListing = interposer.stopAt(SwitchPoint.USAGE_ADD).onThread("T1");
        Background<Void> t1 = Background.run("T1", use);
        beforeListing.awaitArrival();
        Background<Void> t2 = Background.run("T2", close);
        assertTrue(t2.awaitFinishedOrWaiting(), "the close waited for the held use: the forced order cannot happen");
        assertEquals(null, t2.joinFailure(), "the close threw");
        assertTrue(beforeListing.arrived() && !t1.finished(), "T1 is still held before listing its stream");
        beforeListing.release();
        return t1.joinFailure();
    }

    /**
     * The review's case: a stream-ordered buffer made on s2 and used nowhere else, a launch naming
     * it queued on s1 while another thread closes it and allocates again on s2, which gets the
     * same recycled object (and, from the simulated pool, the same address).
     */
    @Test
    void aLaunchRacingTheCloseOfItsStreamOrderedBufferIsRefusedAndTheNextAllocationKeepsItsBytes() {
        CudaContext ctx = sim.context();
        try (Stream s1 = ctx.createStream(); Stream s2 = ctx.createStream(); Kernel add = addKernel(ctx)) {
            DeviceBuffer b = s2.allocate(4L * N);
            KernelLaunch launch = addOne(add, b);
            ctx.synchronize();
            DeviceBuffer[] next = new DeviceBuffer[1];
            Throwable refused = useHeldWhileClosed(() -> launch.launch(s1), () -> {
                b.close();
                next[0] = s2.allocate(4L * N);
                next[0].asInts().copyFrom(new int[] {5, 5, 5, 5});
            });
            DeviceBuffer c = next[0];
            assertSame(b.resource(), c.resource(), "the close recycled the object for the next allocation on s2");
            assertInstanceOf(IllegalStateException.class, refused, "the launch was queued on a buffer closed while it "
                    + "was being admitted");
            ctx.synchronize();
            assertEquals(List.of(), sim.gpu.violations(), "the launch ran on freed memory");
            int[] out = new int[N];
            c.asInts().copyTo(out);
            assertArrayEquals(new int[] {5, 5, 5, 5}, out, "the launch of the closed buffer wrote into the next "
                    + "allocation: " + Arrays.toString(out));
            c.close();
        }
        ctx.close();
    }

    /** The same race with the device pool's recycled blocks: a block no stream used goes back to the pool at its close. */
    @Test
    void aLaunchRacingTheCloseOfAPooledBlockIsRefusedAndTheNextBlockKeepsItsBytes() {
        CudaContext ctx = sim.pooledContext();
        try (Stream s1 = ctx.createStream(); Kernel add = addKernel(ctx)) {
            DeviceBuffer b = ctx.allocate(4L * N);
            KernelLaunch launch = addOne(add, b);
            long address = b.address();
            DeviceBuffer[] next = new DeviceBuffer[1];
            Throwable refused = useHeldWhileClosed(() -> launch.launch(s1), () -> {
                b.close();
                next[0] = ctx.allocate(4L * N);
                next[0].asInts().copyFrom(new int[] {5, 5, 5, 5});
            });
            DeviceBuffer c = next[0];
            assertEquals(address, c.address(), "the pool handed the closed block's memory to the next allocation");
            assertInstanceOf(IllegalStateException.class, refused, "the launch was queued on a block closed while it "
                    + "was being admitted");
            ctx.synchronize();
            int[] out = new int[N];
            c.asInts().copyTo(out);
            assertArrayEquals(new int[] {5, 5, 5, 5}, out, "the launch of the closed buffer wrote into the next "
                    + "allocation: " + Arrays.toString(out));
            c.close();
            assertEquals(List.of(), sim.gpu.violations());
        }
        ctx.close();
    }

    /**
     * A kind that is never recycled, whose use is refused by its closed flag alone: the launch
     * completion event a prepared launch names (its handle baked into the launch's attributes),
     * closed by another thread while the launch is admitted. Unused on any stream, it is destroyed
     * at once by its close.
     */
    @Test
    void aLaunchRacingTheCloseOfItsCompletionEventIsRefused() {
        CudaContext ctx = sim.context();
        try (Stream s1 = ctx.createStream(); Kernel add = addKernel(ctx); DeviceBuffer b = ctx.allocate(4L * N)) {
            Event done = ctx.createEvent();
            MemorySegment handle = done.handle();
            KernelLaunch launch = add.prepare(LaunchConfig.of(1, N).withLaunchCompletionEvent(done), KernelArg.pointer(b),
                    KernelArg.i32(N), KernelArg.i32(1));
            Throwable refused = useHeldWhileClosed(() -> launch.launch(s1), done::close);
            assertInstanceOf(IllegalStateException.class, refused, "the launch reached the driver naming an event "
                    + "closed while it was being admitted");
            ctx.synchronize();
            assertEquals(List.of(), sim.gpu.violations());
            assertFalse(sim.gpu.eventAlive(handle), "the closed event was destroyed");
        }
        ctx.close();
    }

    /** Control: a launch listed before the close makes the close fence its stream; nothing is refused or freed early. */
    @Test
    void aLaunchListedBeforeTheCloseIsFencedByIt() {
        CudaContext ctx = sim.context();
        try (Stream s1 = ctx.createStream(); Stream s2 = ctx.createStream(); Kernel add = addKernel(ctx)) {
            DeviceBuffer b = s2.allocate(4L * N);
            KernelLaunch launch = addOne(add, b);
            Interposer.Stop inLaunch = interposer.stopBefore("cuLaunchKernel").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> launch.launch(s1));
            inLaunch.awaitArrival(); // listed on s1, and holding s1's lock
            Background<Void> t2 = Background.run("T2", b::close);
            assertEquals(false, t2.awaitFinishedOrWaiting(), "the close fences s1, under s1's lock: it waits for the launch");
            inLaunch.release();
            t1.join();
            t2.join();
            ctx.synchronize();
            assertEquals(List.of(), sim.gpu.violations(), "the buffer was freed before the launch listed on s1 ran");
        }
        ctx.close();
    }
}
