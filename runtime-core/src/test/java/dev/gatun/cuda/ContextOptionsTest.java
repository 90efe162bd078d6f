package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link ContextOptions#defaults()} reads {@code gatun.leakTracking}: true or false, never a silent false. */
class ContextOptionsTest {

    private final String saved = System.getProperty(ContextOptions.LEAK_TRACKING_PROPERTY);

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty(ContextOptions.LEAK_TRACKING_PROPERTY);
        } else {
            System.setProperty(ContextOptions.LEAK_TRACKING_PROPERTY, saved);
        }
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
