package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;

class DevicePoolOptionsTest {

    @Example
    void unsetPropertiesMeanTheDefaultBoundAndNoProfiling() {
        assertEquals(new DevicePoolOptions(2L << 30, false), DevicePoolOptions.parse(null, null));
    }

    @Property
    void aBoundPropertyIsReadAsBytes(@ForAll @LongRange(min = 0, max = Long.MAX_VALUE) long bytes) {
        assertEquals(new DevicePoolOptions(bytes, true), DevicePoolOptions.parse(" " + bytes + " ", "True"));
    }

    @Example
    void profilingIsSwitchedByTrueOrFalse() {
        assertEquals(new DevicePoolOptions(0, false), DevicePoolOptions.parse("0", "false"));
        assertEquals(new DevicePoolOptions(0, true), DevicePoolOptions.parse("0", "TRUE"));
    }

    @Example
    void unreadablePropertiesSayWhatToSet() {
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> DevicePoolOptions.parse("-1", null));
        assertTrue(negative.getMessage().contains("gatun.pool.bytes"), negative.getMessage());
        IllegalArgumentException suffix = assertThrows(IllegalArgumentException.class,
                () -> DevicePoolOptions.parse("2G", null));
        assertTrue(suffix.getMessage().contains("whole number of bytes"), suffix.getMessage());
        IllegalArgumentException yes = assertThrows(IllegalArgumentException.class,
                () -> DevicePoolOptions.parse(null, "yes"));
        assertTrue(yes.getMessage().contains("gatun.pool.profile") && yes.getMessage().contains("true or false"),
                yes.getMessage());
    }

    @Example
    void aNegativeBoundIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new DevicePoolOptions(-1, false));
    }
}
