package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class FaultPlanTest {

    @Test
    void replaceSkipsTheCallOnceThenPassesThrough() {
        FaultPlan plan = new FaultPlan().replaceOnce("cuEventRecord", 999);
        assertEquals(999, plan.before("cuEventRecord"));
        assertEquals(FaultPlan.PASS, plan.before("cuEventRecord"));
        assertEquals(FaultPlan.PASS, plan.before("cuStreamQuery"));
    }

    @Test
    void overrideReplacesTheResultOfAMadeCall() {
        FaultPlan plan = new FaultPlan().overrideOnce("cuLaunchKernel", 719);
        assertEquals(FaultPlan.PASS, plan.before("cuLaunchKernel"), "an override does not skip the call");
        assertEquals(719, plan.after("cuLaunchKernel", 0));
        assertEquals(0, plan.after("cuLaunchKernel", 0));
    }

    @Test
    void skipLetsCallsThroughBeforeFailing() {
        FaultPlan plan = new FaultPlan().inject("cuMemAlloc_v2", 2, FaultPlan.Mode.REPLACE, 2, 2);
        assertEquals(FaultPlan.PASS, plan.before("cuMemAlloc_v2"));
        assertEquals(FaultPlan.PASS, plan.before("cuMemAlloc_v2"));
        assertEquals(2, plan.before("cuMemAlloc_v2"));
        assertEquals(2, plan.before("cuMemAlloc_v2"));
        assertEquals(FaultPlan.PASS, plan.before("cuMemAlloc_v2"));
    }

    @Test
    void alwaysKeepsFailingAndCallsAreCounted() {
        FaultPlan plan = new FaultPlan().replaceAlways("cuEventQuery", FakeDriverApi.NOT_READY);
        for (int i = 0; i < 5; i++) {
            assertEquals(FakeDriverApi.NOT_READY, plan.before("cuEventQuery"));
        }
        assertEquals(5, plan.calls("cuEventQuery"));
        plan.clear();
        assertEquals(FaultPlan.PASS, plan.before("cuEventQuery"));
        assertEquals(0, plan.calls("cuEventQuery"));
    }

    @Test
    void countingWorksWithoutFaults() {
        FaultPlan plan = new FaultPlan().countCalls();
        plan.before("cuInit");
        plan.before("cuInit");
        assertEquals(2, plan.calls("cuInit"));
    }

    @Test
    void successAndPassAreNotFaults() {
        FaultPlan plan = new FaultPlan();
        assertThrows(IllegalArgumentException.class, () -> plan.replaceOnce("cuInit", 0));
        assertThrows(IllegalArgumentException.class, () -> plan.replaceOnce("cuInit", FaultPlan.PASS));
        assertThrows(IllegalArgumentException.class, () -> plan.inject("cuInit", 1, FaultPlan.Mode.REPLACE, -1, 1));
    }
}
