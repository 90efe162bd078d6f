package dev.gatun.cuda.bench;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.internal.driver.DriverApi;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Gatun's own work per operation on the rows of issue 36 that miss their goal, measured with no
 * GPU: each row's Gatun operation (as {@code compare}'s Java twin makes it) and the same driver
 * calls made directly ({@code bare}), both on an {@link InstantDriver}, whose calls of these rows
 * return at once. So {@code gatun - bare} is the Java work Gatun does around the calls (owners,
 * locks, checks, counts, the error log's wrapper), without the driver's time and without the
 * Java-to-C transition, which both twins pay on a GPU. A variant build with one step left out
 * (runtime-bench/README.md, "Seventh session", "Ablations") times that step by difference on the same benchmark.
 *
 * <p>Runs anywhere, the CPU-only CI machine included: the simulated driver (gatun-testkit) holds
 * the set-up's state. {@code -prof gc} gives the bytes per operation.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class HostWorkBenchmark {

    /**
     * The stand-in for a stream, pool or event handle in the bare calls: the instant driver reads
     * none. Not the Gatun stream's own handle: a stream whose raw handle was handed out may be
     * captured by code outside Gatun, so each submission on it would ask the driver whether it is
     * capturing, which the twin's stream never does.
     */
    private static final MemorySegment UNREAD_HANDLE = MemorySegment.ofAddress(0x5000);

    /** The rows it times: the four of issue 36 that miss their goal. */
    private static final Set<TwinRow> ROWS = EnumSet.of(TwinRow.EVENT_RECORD_QUERY, TwinRow.ALLOC_STREAM_ORDERED,
            TwinRow.ALLOC_FROM_POOL, TwinRow.ALLOC_UNPOOLED);

    /** One row's context and owners on an instant driver, and the bare calls' out-parameter. */
    @State(Scope.Thread)
    public static class Row {
        /** The {@code compare} row (TwinRow id) whose operation is timed. */
        @Param({"event_record_query", "alloc_stream_ordered", "alloc_from_pool", "alloc_unpooled"})
        public String row;

        /** The row, resolved once: choosing it costs both benchmarks an enum switch, not a string switch. */
        TwinRow kind;
        InstantDriver driver;
        CudaContext context;
        Stream stream;
        Event event;
        MemoryPool pool;
        final MemorySegment out = Arena.global().allocate(ValueLayout.JAVA_LONG);

        @Setup
        public void open() {
            open(new FakeDriverApi().api());
        }

        /** Sets the row up with {@code simulated} behind the instant driver (a test's may count the calls it gets). */
        void open(DriverApi simulated) {
            kind = TwinRow.byId(row);
            if (!ROWS.contains(kind)) {
                throw new IllegalArgumentException(row + ": not one of " + ROWS);
            }
            driver = new InstantDriver(simulated);
            Cuda cuda = FakeCuda.over(Driver.create(driver, "instant driver"));
            // As TwinWorkload: the pool-off row on a context whose device pool is off, so that
            // each close reaches cuMemFree.
            ContextOptions options = kind == TwinRow.ALLOC_UNPOOLED
                    ? ContextOptions.defaults().withDevicePool(new DevicePoolOptions(0, false))
                    : ContextOptions.defaults();
            context = cuda.device(0).context(options);
            stream = context.createStream();
            event = context.createEvent();
            // As twins.c: a pool that keeps what is freed.
            pool = context.createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE));
        }

        @TearDown
        public void close() {
            pool.close();
            event.close();
            stream.close();
            context.close();
        }
    }

    /** The row's operation on Gatun, as {@code TwinWorkload} makes it. */
    @Benchmark
    public boolean gatun(Row r) {
        switch (r.kind) {
            case EVENT_RECORD_QUERY -> {
                r.event.record(r.stream);
                return r.event.query();
            }
            case ALLOC_STREAM_ORDERED -> r.stream.allocate(TwinRow.ALLOCATION_BYTES).close();
            case ALLOC_FROM_POOL -> r.pool.allocate(r.stream, TwinRow.ALLOCATION_BYTES).close();
            case ALLOC_UNPOOLED -> r.context.allocate(TwinRow.ALLOCATION_BYTES).close();
            default -> throw new IllegalArgumentException(r.row); // refused at set-up
        }
        return true;
    }

    /** The calls C makes for the row, straight to the instant driver, each result checked. */
    @Benchmark
    public long bare(Row r) {
        InstantDriver d = r.driver;
        MemorySegment out = r.out;
        switch (r.kind) {
            case EVENT_RECORD_QUERY -> {
                check(d.cuEventRecord(UNREAD_HANDLE, UNREAD_HANDLE));
                return d.cuEventQuery(UNREAD_HANDLE);
            }
            case ALLOC_STREAM_ORDERED -> {
                check(d.cuMemAllocAsync(out, TwinRow.ALLOCATION_BYTES, UNREAD_HANDLE));
                long address = out.get(ValueLayout.JAVA_LONG, 0);
                check(d.cuMemFreeAsync(address, UNREAD_HANDLE));
                return address;
            }
            case ALLOC_FROM_POOL -> {
                check(d.cuMemAllocFromPoolAsync(out, TwinRow.ALLOCATION_BYTES, UNREAD_HANDLE, UNREAD_HANDLE));
                long address = out.get(ValueLayout.JAVA_LONG, 0);
                check(d.cuMemFreeAsync(address, UNREAD_HANDLE));
                return address;
            }
            case ALLOC_UNPOOLED -> {
                check(d.cuMemAlloc_v2(out, TwinRow.ALLOCATION_BYTES));
                long address = out.get(ValueLayout.JAVA_LONG, 0);
                check(d.cuMemFree_v2(address));
                return address;
            }
            default -> throw new IllegalArgumentException(r.row); // refused at set-up
        }
    }

    private static void check(int result) {
        if (result != 0) {
            throw new IllegalStateException("CUresult " + result);
        }
    }
}
