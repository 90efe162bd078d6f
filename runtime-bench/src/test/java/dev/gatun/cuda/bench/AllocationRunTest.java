package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AllocationRunTest {

    @Test
    void theLineNamesTheBenchmarkAsTheRowsDoAndTakesTheMedianIterationsBytes() {
        // The last iteration carries the trial's tear-down: the mean would be 1.2 B/op, the median is 0.03.
        String line = AllocationRun.line("dev.gatun.cuda.bench.GraphReplayBenchmark.replayGraph", Map.of("kernels", "10"),
                List.of(0.03, 0.02, 0.04, 5.6), 6.06, "us/op");

        assertEquals("JMH GraphReplayBenchmark.replayGraph:kernels=10 0.035 6.06 us/op", line);
        assertEquals(TwinRow.REPLAY_10.jmh(), line.split(" ")[1]);
    }

    @Test
    void severalParametersAreSortedAndABenchmarkWithoutAnyHasNone() {
        assertEquals("JMH MemoryBenchmark.allocateAndClose:a=1,pool=unpooled 0.0 2.5 us/op",
                AllocationRun.line("dev.gatun.cuda.bench.MemoryBenchmark.allocateAndClose",
                        Map.of("pool", "unpooled", "a", "1"), List.of(0.0), 2.5, "us/op"));
        assertEquals("JMH LaunchBenchmark.launchEmptyKernel NaN 3.8 us/op",
                AllocationRun.line("dev.gatun.cuda.bench.LaunchBenchmark.launchEmptyKernel", Map.of(), List.of(), 3.8,
                        "us/op"));
    }
}
