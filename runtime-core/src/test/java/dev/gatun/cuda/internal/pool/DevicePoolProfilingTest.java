package dev.gatun.cuda.internal.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.DevicePoolSite;
import example.app.PoolUser;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class DevicePoolProfilingTest {

    private static final StackTraceElement SITE_A = new StackTraceElement("app.A", "run", "A.java", 1);
    private static final StackTraceElement SITE_B = new StackTraceElement("app.B", "run", "B.java", 2);

    /** Names a chosen site and counts how often the pool asked. */
    private static final class ScriptedLocator implements Supplier<StackTraceElement> {
        final AtomicInteger calls = new AtomicInteger();
        volatile StackTraceElement next = SITE_A;

        @Override
        public StackTraceElement get() {
            calls.incrementAndGet();
            return next;
        }
    }

    private final FakeBackend backend = new FakeBackend();
    private final ScriptedLocator locator = new ScriptedLocator();

    private DevicePool pool(boolean profiling) {
        return new DevicePool(backend, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, profiling),
                new SiteProfile(locator));
    }

    private static void cycle(DevicePool pool, long bytes) {
        pool.release(pool.acquire(bytes), bytes);
    }

    @Test
    void offItNeverLocatesACallerNorRecordsOne() {
        DevicePool pool = pool(false);
        for (int i = 0; i < 100; i++) {
            cycle(pool, 1000);
        }
        assertEquals(0, locator.calls.get(), "no stack walk while off");
        assertEquals(List.of(), pool.sites());
        assertEquals(100, pool.counters().hits() + pool.counters().misses(), "the pool itself ran");
    }

    @Test
    void onItCountsEachSiteSortedByBytesRequested() {
        DevicePool pool = pool(true);
        cycle(pool, 1000); // A: miss
        cycle(pool, 1000); // A: hit
        locator.next = SITE_B;
        cycle(pool, 5000); // B: miss
        cycle(pool, 4097); // B: hit, same 8192-byte class

        assertEquals(List.of(new DevicePoolSite(SITE_B, 2, 1, 1, 9097), new DevicePoolSite(SITE_A, 2, 1, 1, 2000)),
                pool.sites());
        assertEquals(4, locator.calls.get());
    }

    @Test
    void switchingItRecordsOnlyWhileOn() {
        DevicePool pool = pool(false);
        cycle(pool, 512);
        pool.setProfiling(true);
        assertTrue(pool.isProfiling());
        cycle(pool, 512);
        pool.setProfiling(false);
        cycle(pool, 512);

        assertFalse(pool.isProfiling());
        assertEquals(List.of(new DevicePoolSite(SITE_A, 1, 1, 0, 512)), pool.sites(), "kept after switching off");
        assertEquals(1, locator.calls.get());
    }

    @Test
    void theStackWalkerNamesTheFirstFrameOutsideGatun() {
        DevicePool pool = new DevicePool(backend, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, true));
        long a = PoolUser.loadWeights(pool, 3 << 20);
        pool.release(PoolUser.scratch(pool, 100), 100);
        pool.release(PoolUser.scratch(pool, 200), 200);
        pool.release(a, 3 << 20);

        List<DevicePoolSite> sites = pool.sites();
        assertEquals(2, sites.size(), sites::toString);
        assertEquals(PoolUser.class.getName(), sites.get(0).site().getClassName());
        assertEquals("loadWeights", sites.get(0).site().getMethodName());
        assertEquals(new DevicePoolSite(sites.get(0).site(), 1, 0, 1, 3 << 20), sites.get(0));
        assertEquals("scratch", sites.get(1).site().getMethodName());
        assertEquals(new DevicePoolSite(sites.get(1).site(), 2, 1, 1, 300), sites.get(1));
    }

    @Test
    void libraryCodeIsTheApiPackageAndEverythingInternalOrGraph() {
        assertTrue(CallSites.isLibrary("dev.gatun.cuda.DeviceBuffer"));
        assertTrue(CallSites.isLibrary("dev.gatun.cuda.DeviceBuffer$Resource"));
        assertTrue(CallSites.isLibrary("dev.gatun.cuda.internal.pool.DevicePool"));
        assertTrue(CallSites.isLibrary("dev.gatun.cuda.graph.CapturedGraph"));
        assertFalse(CallSites.isLibrary("dev.gatun.cuda.cli.GatunCli"), "the CLI uses the library");
        assertFalse(CallSites.isLibrary("dev.gatun.cudax.Foo"));
        assertFalse(CallSites.isLibrary("example.app.PoolUser"));
    }
}
