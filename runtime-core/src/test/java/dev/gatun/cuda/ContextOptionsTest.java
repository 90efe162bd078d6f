package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link ContextOptions#defaults()} reads {@code gatun.leakTracking} and {@code gatun.oomLadder}: true or false, never a silent default. */
class ContextOptionsTest {

    private final String saved = System.getProperty(ContextOptions.LEAK_TRACKING_PROPERTY);
    private final String savedLadder = System.getProperty(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY);

    @AfterEach
    void restore() {
        restore(ContextOptions.LEAK_TRACKING_PROPERTY, saved);
        restore(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY, savedLadder);
    }

    private static void restore(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    @Test
    void theOutOfMemoryLadderIsOnUnlessSwitchedOffWithFalse() {
        System.clearProperty(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY);
        assertTrue(ContextOptions.defaults().outOfMemoryLadder(), "on when unset");
        System.setProperty(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY, " False ");
        assertFalse(ContextOptions.defaults().outOfMemoryLadder());
        assertTrue(ContextOptions.defaults().withOutOfMemoryLadder(true).outOfMemoryLadder());
        System.setProperty(ContextOptions.OUT_OF_MEMORY_LADDER_PROPERTY, "off");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, ContextOptions::defaults);
        assertEquals("system property gatun.oomLadder is 'off'; set it to true or false (any case), or leave it "
                + "unset for true", e.getMessage());
    }

    @Test
    void leakTrackingIsSwitchedByTrueOrFalse() {
        System.clearProperty(ContextOptions.LEAK_TRACKING_PROPERTY);
        assertFalse(ContextOptions.defaults().leakTracking(), "off when unset");
        System.setProperty(ContextOptions.LEAK_TRACKING_PROPERTY, "TRUE");
        assertTrue(ContextOptions.defaults().leakTracking());
        System.setProperty(ContextOptions.LEAK_TRACKING_PROPERTY, "false");
        assertFalse(ContextOptions.defaults().leakTracking());
    }

    @Test
    void anyOtherLeakTrackingValueIsAnErrorThatNamesItNotASilentFalse() {
        System.setProperty(ContextOptions.LEAK_TRACKING_PROPERTY, "yes");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, ContextOptions::defaults);
        assertEquals("system property gatun.leakTracking is 'yes'; set it to true or false (any case), or leave it "
                + "unset for false", e.getMessage());
    }
}
