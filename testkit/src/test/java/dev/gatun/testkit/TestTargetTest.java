package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The setting's values, and which target runs on the GPU. */
class TestTargetTest {

    /** A presence check that must not be made. */
    private static final BooleanSupplier NOT_ASKED = () -> {
        throw new AssertionError("the GPU's presence was asked for, which loads the driver");
    };

    @Test
    void theValuesAreReadInAnyCaseAndUnsetIsAuto() {
        assertEquals(TestTarget.SIMULATED, TestTarget.parse(" Simulated "));
        assertEquals(TestTarget.GPU, TestTarget.parse("GPU"));
        assertEquals(TestTarget.AUTO, TestTarget.parse("auto"));
        assertEquals(TestTarget.AUTO, TestTarget.parse(null));
    }

    @Test
    void anyOtherValueIsRefusedNamingTheSettingAndWhatItAccepts() {
        for (String wrong : new String[] {"", "gpus", "true", "sim"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TestTarget.parse(wrong));
            assertEquals("gatun.testkit.target is '" + wrong + "'; set it to simulated, gpu, auto (any case), or leave "
                    + "it unset for auto", e.getMessage());
        }
    }

    @Test
    void autoRunsOnTheGpuOnlyWhereOneIsPresent() {
        assertTrue(TestTarget.AUTO.onGpu(() -> true));
        assertFalse(TestTarget.AUTO.onGpu(() -> false));
    }

    @Test
    void theForcedTargetsDoNotAskForTheGpu() {
        assertTrue(TestTarget.GPU.onGpu(NOT_ASKED));
        assertFalse(TestTarget.SIMULATED.onGpu(NOT_ASKED));
    }
}
