package example.kernelbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The allocation check's verdict, from the GC profiler's bytes per operation of each iteration. */
class AllocationCheckTest {

    @Test
    void jmhsOwnBackgroundIsNothing() {
        AllocationCheck.Verdict v = AllocationCheck.Verdict.of("SaxpyBenchmark.issue", List.of(0.12, 0.08, 0.15));
        assertFalse(v.allocates());
        assertEquals("ALLOCATION SaxpyBenchmark.issue 0.12 B/op: none", v.line());
    }

    @Test
    void anAllocationInTheMeasuredPathFails() {
        AllocationCheck.Verdict v = AllocationCheck.Verdict.of("SaxpyBenchmark.gpuTime", List.of(16.0, 16.1, 15.9));
        assertTrue(v.allocates());
        assertEquals("ALLOCATION SaxpyBenchmark.gpuTime 16.00 B/op: ALLOCATES (limit 1.0 B/op)", v.line());
    }

    @Test
    void theLastIterationsTearDownDoesNotDecide() {
        // JMH charges the trial's tear-down (closing the context) to the last iteration.
        assertFalse(AllocationCheck.Verdict.of("b", List.of(0.1, 0.1, 4096.0)).allocates());
        assertEquals(0.15, AllocationCheck.Verdict.of("b", List.of(0.1, 0.2, 5000.0, 0.1)).bytesPerOp(), 1e-9);
    }

    @Test
    void aRunWithoutTheGcProfilerIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AllocationCheck.Verdict.of("b", List.of()));
        assertEquals("b has no gc.alloc.rate.norm results: run it with JMH's GC profiler (-prof gc)", e.getMessage());
    }
}
