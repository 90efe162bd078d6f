package dev.gatun.cuda.internal.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SettingsTest {

    @Test
    void aSwitchIsTrueOrFalseInAnyCaseAndUnsetMeansItsDefault() {
        assertTrue(Settings.flag("s", "true", false));
        assertTrue(Settings.flag("s", " TRUE ", false));
        assertFalse(Settings.flag("s", "False", true));
        assertTrue(Settings.flag("s", null, true));
        assertFalse(Settings.flag("s", null, false));
    }

    @Test
    void anyOtherSwitchValueIsAnErrorNamingTheSettingTheValueAndWhatIsAccepted() {
        for (String value : List.of("yes", "1", "on", "", "  ", "tru")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Settings.flag("system property gatun.x", value, false), value);
            assertEquals("system property gatun.x is '" + value + "'; set it to true or false (any case), or leave it "
                    + "unset for false", e.getMessage());
        }
    }

    @Test
    void bytesAreAWholeNumberInRange() {
        assertEquals(5, Settings.bytes("s", null, 5, 0, 10, ""));
        assertEquals(7, Settings.bytes("s", " 7 ", 5, 0, 10, ""));
        IllegalArgumentException over = assertThrows(IllegalArgumentException.class,
                () -> Settings.bytes("system property gatun.y", "11", 5, 1, 10, "; or unset it"));
        assertEquals("system property gatun.y is '11'; set it to a whole number of bytes from 1 to 10; or unset it",
                over.getMessage());
        IllegalArgumentException text = assertThrows(IllegalArgumentException.class,
                () -> Settings.bytes("p", "2G", 5, 0, Long.MAX_VALUE, ""));
        assertEquals("p is '2G'; set it to a whole number of bytes", text.getMessage());
    }
}
