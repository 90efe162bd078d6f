package dev.gatun.cuda.faults;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GrowableBuffer;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.PoolExportHandle;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.function.ToIntFunction;

/**
 * One simulated machine for one fault run, with device 0's context open (device pool off, so
 * every close reaches the driver) and warmed by one round trip, so that its staging block and
 * pooled events are part of the baseline. What a scenario opens is registered here and closed,
 * newest first, after the call.
 */
final class FaultWorld {

    static final ContextOptions OPTIONS = ContextOptions.defaults().withDevicePool(new DevicePoolOptions(0, false));
    /** The kernel every scenario launches: k(pointer, count). */
    static final String KERNEL = "k";
    static final ModuleImage IMAGE = ModuleImage.ptx("k.ptx", Ptx.module(KERNEL, "u64", "u32"));
    static final String MODULE = "m";

    /** Driver objects the simulated GPU holds, counted to find what Gatun left behind. */
    enum Native {
        DEVICE_ALLOCATION(FakeDriverApi::liveDeviceAllocations),
        HOST_ALLOCATION(FakeDriverApi::liveHostAllocations),
        STREAM(FakeDriverApi::liveStreams),
        EVENT(FakeDriverApi::liveEvents),
        MODULE(FakeDriverApi::liveModules),
        GRAPH(FakeDriverApi::liveGraphs),
        GRAPH_EXEC(FakeDriverApi::liveGraphExecs),
        MEMORY_POOL(FakeDriverApi::liveMemoryPools),
        ADDRESS_RANGE(FakeDriverApi::liveReservations),
        PHYSICAL_ALLOCATION(FakeDriverApi::livePhysicalAllocations),
        MAPPING(FakeDriverApi::liveMappings),
        IPC_MAPPING(FakeDriverApi::liveIpcMappings),
        GREEN_CONTEXT(FakeDriverApi::liveGreenContexts),
        LIBRARY(FakeDriverApi::liveLibraries);

        private final ToIntFunction<FakeDriverApi> live;

        Native(ToIntFunction<FakeDriverApi> live) {
            this.live = live;
        }
    }

    final Simulated sim;
    final CudaContext ctx;
    private final Deque<AutoCloseable> opened = new ArrayDeque<>();
    /** What a scenario keeps for its outcome's check, by type. */
    private final Map<Class<?>, Object> kept = new HashMap<>();
    private final Random random = new Random(15);

    /**
     * @param devices how many simulated devices
     * @param driverVersion the CUDA version the simulated driver reports
     */
    FaultWorld(int devices, int driverVersion) {
        sim = new Simulated(new FakeDriverApi().deviceCount(devices).version(driverVersion));
        ctx = sim.context();
        // A gate left held by a failed capture shows as a CaptureActiveException, not a hang.
        ctx.setGateTimeout(Duration.ofMillis(200));
        roundTrip(ctx);
    }

    /** What the simulated driver holds now, per kind. */
    Map<Native, Integer> driverObjects() {
        Map<Native, Integer> counts = new EnumMap<>(Native.class);
        for (Native n : Native.values()) {
            counts.put(n, n.live.applyAsInt(sim.gpu));
        }
        return counts;
    }

    /** Registers {@code owner} to be closed after the call; returns it. */
    <T extends AutoCloseable> T open(T owner) {
        opened.push(owner);
        return owner;
    }

    /** Keeps {@code subject} for the outcome's check ({@link #kept}); returns it. */
    <T> T keep(T subject) {
        kept.put(subject.getClass(), subject);
        return subject;
    }

    /** The subject of type {@code type} the scenario kept. */
    <T> T kept(Class<T> type) {
        Object subject = kept.get(type);
        if (subject == null) {
            throw new IllegalStateException("the scenario kept no " + type.getSimpleName());
        }
        return type.cast(subject);
    }

    /** Closes what the scenario opened, newest first. */
    void closeOpened() throws Exception {
        while (!opened.isEmpty()) {
            opened.pop().close();
        }
    }

    /** A stream another library created in device 0's primary context, destroyed by it after the call. */
    MemorySegment foreignStream() {
        MemorySegment raw = sim.gpu.foreignStream(sim.gpu.primaryContext(0));
        open(() -> assertEquals(FakeDriverApi.SUCCESS, sim.gpu.destroyForeignStream(raw), "destroying the foreign stream"));
        return raw;
    }

    /** Device memory another library allocated in device 0's primary context, freed by it after the call. */
    long foreignDeviceMemory(long bytes) {
        long address = sim.gpu.foreignDeviceMemory(sim.gpu.primaryContext(0), bytes);
        open(() -> assertEquals(FakeDriverApi.SUCCESS, sim.gpu.freeForeignDeviceMemory(address), "freeing the foreign memory"));
        return address;
    }

    /** Device {@code device}'s context (with this world's options), closed after the call. */
    CudaContext context(int device) {
        CudaContext c = open(sim.cuda.device(device).context(OPTIONS));
        c.setGateTimeout(ctx.gateTimeout());
        return c;
    }

    Stream stream() {
        return open(ctx.createStream());
    }

    DeviceBuffer buffer(long bytes) {
        return open(ctx.allocate(bytes));
    }

    PinnedBuffer pinned(long bytes) {
        return open(ctx.allocatePinned(bytes));
    }

    /** A memory pool with the default options. */
    MemoryPool pool() {
        return open(ctx.createMemoryPool(MemoryPoolOptions.defaults()));
    }

    /** A growable buffer reserving 8 MiB (four 2 MiB chunks on the simulated driver). */
    GrowableBuffer growable() {
        return open(ctx.reserveGrowable(8L << 20));
    }

    /** A memory pool exportable through a POSIX file descriptor. */
    MemoryPool exportablePool() {
        return open(ctx.createMemoryPool(MemoryPoolOptions.defaults().withExportHandle(PoolExportHandle.POSIX_FILE_DESCRIPTOR)));
    }

    Event event() {
        return open(ctx.createEvent());
    }

    Event timingEvent() {
        return open(ctx.createTimingEvent());
    }

    /** Loads the module under {@link #MODULE}; unloaded after the call. */
    void loadModule() {
        ctx.modules().load(MODULE, IMAGE, KERNEL);
        open(() -> ctx.modules().unload(MODULE));
    }

    /** The kernel of a freshly loaded module. */
    Kernel kernel() {
        loadModule();
        return open(ctx.modules().kernel(MODULE, KERNEL));
    }

    /** A prepared launch of {@code k} over a fresh 256-byte buffer. */
    KernelLaunch launch(Kernel k, LaunchConfig config) {
        return k.prepare(config, KernelArg.pointer(buffer(256)), KernelArg.i32(64));
    }

    /** A graph of one launch of {@code k}, captured on {@code s}. */
    Graph graph(Kernel k, Stream s) {
        KernelLaunch launch = launch(k, LaunchConfig.of(1, 64));
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            launch.launch(s);
            return open(capture.end());
        }
    }

    GraphExec exec(Graph g) {
        return open(g.instantiate());
    }

    /** Proves {@code c} usable: allocate, copy random bytes in, read them back, compare, close. */
    void roundTrip(CudaContext c) {
        byte[] data = new byte[4096];
        random.nextBytes(data);
        byte[] back = new byte[data.length];
        try (DeviceBuffer b = c.allocate(data.length)) {
            b.bytes().copyFrom(data);
            b.bytes().copyTo(back);
        }
        assertArrayEquals(data, back, "a round trip through device memory");
        c.reap();
    }
}
