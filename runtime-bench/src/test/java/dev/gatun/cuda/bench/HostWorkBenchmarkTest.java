package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.driver.DriverApi;
import dev.gatun.cuda.testing.FakeDriverApi;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link HostWorkBenchmark} times only Gatun's Java work if each operation's calls are the instant
 * driver's and none reaches the simulated driver behind it (whose proxy, reflection and lock would
 * then be timed as Gatun's): checked here per row for both benchmarks, warm, with the calls the
 * simulated driver gets counted; and the check is shown to catch such a call.
 */
class HostWorkBenchmarkTest {

    private static final int WARM = 600;
    private static final int OPS = 1000;

    /** The simulated driver, counting every call it gets once counting is on. */
    private static final class Counted {
        final Map<String, Integer> calls = new TreeMap<>();
        boolean counting;
        final DriverApi api;

        Counted() {
            DriverApi simulated = new FakeDriverApi().api();
            api = (DriverApi) Proxy.newProxyInstance(DriverApi.class.getClassLoader(), new Class<?>[] {DriverApi.class},
                    (proxy, method, args) -> {
                        if (counting && method.getDeclaringClass() == DriverApi.class) {
                            calls.merge(method.getName(), 1, Integer::sum);
                        }
                        try {
                            return method.invoke(simulated, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }
    }

    @ParameterizedTest(name = "{0}: Gatun {1} instant calls an operation, bare {2}")
    @CsvSource({
        "event_record_query, 2, 2",
        "alloc_stream_ordered, 2, 2",
        "alloc_from_pool, 2, 2",
        // Pool off: Gatun checks the current context before cuMemAlloc and before cuMemFree (C does not).
        "alloc_unpooled, 4, 2",
    })
    void aWarmOperationMakesOnlyInstantCalls(String id, int gatunCalls, int bareCalls) {
        HostWorkBenchmark benchmark = new HostWorkBenchmark();
        Counted simulated = new Counted();
        HostWorkBenchmark.Row row = new HostWorkBenchmark.Row();
        row.row = id;
        row.open(simulated.api);
        try {
            for (int i = 0; i < WARM; i++) {
                benchmark.gatun(row);
                benchmark.bare(row);
            }
            simulated.counting = true;
            long before = row.driver.answered();
            for (int i = 0; i < OPS; i++) {
                benchmark.gatun(row);
            }
            long gatun = row.driver.answered() - before;
            before = row.driver.answered();
            for (int i = 0; i < OPS; i++) {
                benchmark.bare(row);
            }
            long bare = row.driver.answered() - before;
            simulated.counting = false;

            assertEquals(Map.of(), simulated.calls, id + ": calls that reached the simulated driver during "
                    + 2 * OPS + " warm operations");
            assertEquals((long) gatunCalls * OPS, gatun, id + ": instant calls of " + OPS + " Gatun operations");
            assertEquals((long) bareCalls * OPS, bare, id + ": instant calls of " + OPS + " bare operations");
        } finally {
            row.close();
        }
    }

    /**
     * The check above catches a call that leaks to the simulated driver: a stream whose raw handle
     * was handed out may be captured by code outside Gatun, so each event record on it asks
     * whether it is capturing ({@code cuStreamIsCapturing}), which the benchmark's stream never
     * does.
     */
    @Test
    void aCallThatReachesTheSimulatedDriverIsCounted() {
        HostWorkBenchmark benchmark = new HostWorkBenchmark();
        Counted simulated = new Counted();
        HostWorkBenchmark.Row row = new HostWorkBenchmark.Row();
        row.row = "event_record_query";
        row.open(simulated.api);
        try {
            row.stream.handle();
            for (int i = 0; i < WARM; i++) {
                benchmark.gatun(row);
            }
            simulated.counting = true;
            for (int i = 0; i < OPS; i++) {
                benchmark.gatun(row);
            }
            simulated.counting = false;
            assertTrue(simulated.calls.getOrDefault("cuStreamIsCapturing", 0) >= OPS, "calls counted: " + simulated.calls);
        } finally {
            row.close();
        }
    }
}
