package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link GpuCoredumps}: its checks, and the system properties it reads, strictly. */
class GpuCoredumpsTest {

    private static final List<String> PROPERTIES = List.of(GpuCoredumps.PROPERTY, GpuCoredumps.FILE_PROPERTY,
            GpuCoredumps.LIGHTWEIGHT_PROPERTY);
    private final List<String> saved = PROPERTIES.stream().map(System::getProperty).toList();

    @AfterEach
    void restore() {
        for (int i = 0; i < PROPERTIES.size(); i++) {
            if (saved.get(i) == null) {
                System.clearProperty(PROPERTIES.get(i));
            } else {
                System.setProperty(PROPERTIES.get(i), saved.get(i));
            }
        }
    }

    private static void clear() {
        PROPERTIES.forEach(System::clearProperty);
    }

    @Test
    void offUnlessTurnedOnAndContextOptionsCarryIt() {
        clear();
        assertFalse(GpuCoredumps.fromSystemProperties().enabled());
        assertFalse(ContextOptions.defaults().coredumps().enabled());
        assertFalse(new ContextOptions(ContextOptions.defaults().gateTimeout(), ContextOptions.defaults().devicePool(),
                false, true).coredumps().enabled(), "the constructors without coredumps leave them off");
        GpuCoredumps dumps = GpuCoredumps.into(Path.of("/tmp/dumps"));
        assertEquals(dumps, ContextOptions.defaults().withCoredumps(dumps).coredumps());
        assertEquals(dumps, ContextOptions.defaults().withCoredumps(dumps).withLeakTracking(true).coredumps(),
                "the other withers keep it");
    }

    @Test
    void turnedOnTheyAreLightweightInTheWorkingDirectoryUnlessToldOtherwise() {
        clear();
        System.setProperty(GpuCoredumps.PROPERTY, " TRUE ");
        GpuCoredumps dumps = ContextOptions.defaults().coredumps();
        assertTrue(dumps.enabled());
        assertTrue(dumps.lightweight());
        assertEquals(Path.of("").toAbsolutePath().resolve("core_%h_%p.nvcudmp").toString(), dumps.file());

        System.setProperty(GpuCoredumps.FILE_PROPERTY, "/var/dumps/gpu_%p_%t.core");
        System.setProperty(GpuCoredumps.LIGHTWEIGHT_PROPERTY, "false");
        assertEquals(new GpuCoredumps(true, "/var/dumps/gpu_%p_%t.core", false), GpuCoredumps.fromSystemProperties());
    }

    @Test
    void aSwitchTakesTrueOrFalseOnlyAndTheMessageNamesIt() {
        clear();
        System.setProperty(GpuCoredumps.PROPERTY, "yes");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, ContextOptions::defaults);
        assertEquals("system property gatun.coredump is 'yes'; set it to true or false (any case), or leave it unset "
                + "for false", e.getMessage());
        System.setProperty(GpuCoredumps.PROPERTY, "true");
        System.setProperty(GpuCoredumps.LIGHTWEIGHT_PROPERTY, "full");
        e = assertThrows(IllegalArgumentException.class, GpuCoredumps::fromSystemProperties);
        assertEquals("system property gatun.coredump.lightweight is 'full'; set it to true or false (any case), or "
                + "leave it unset for true", e.getMessage());
    }

    @Test
    void aFileOrLightweightSettingWithoutDumpsOnIsAnErrorNotIgnored() {
        clear();
        System.setProperty(GpuCoredumps.FILE_PROPERTY, "/tmp/x");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, GpuCoredumps::fromSystemProperties);
        assertEquals("system property gatun.coredump.file is '/tmp/x', but GPU coredumps are off; set "
                + "-Dgatun.coredump=true to turn them on, or remove gatun.coredump.file", e.getMessage());
        clear();
        System.setProperty(GpuCoredumps.PROPERTY, "false");
        System.setProperty(GpuCoredumps.LIGHTWEIGHT_PROPERTY, "true");
        e = assertThrows(IllegalArgumentException.class, GpuCoredumps::fromSystemProperties);
        assertTrue(e.getMessage().startsWith("system property gatun.coredump.lightweight is 'true', but GPU coredumps "
                + "are off"), e.getMessage());
    }

    @Test
    void aRelativeEmptyOrOverlongFileIsRefused() {
        clear();
        System.setProperty(GpuCoredumps.PROPERTY, "true");
        System.setProperty(GpuCoredumps.FILE_PROPERTY, "core_%p");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, GpuCoredumps::fromSystemProperties);
        assertTrue(e.getMessage().startsWith("system property gatun.coredump.file is 'core_%p': the coredump file "
                + "pattern 'core_%p' is not an absolute path"), e.getMessage());
        System.setProperty(GpuCoredumps.FILE_PROPERTY, "");
        assertThrows(IllegalArgumentException.class, GpuCoredumps::fromSystemProperties);

        GpuCoredumps on = GpuCoredumps.into(Path.of("/tmp"));
        assertEquals("/tmp/core_%h_%p.nvcudmp", on.file());
        String longest = "/" + "a".repeat(GpuCoredumps.MAX_FILE_BYTES - 1);
        assertEquals(longest, on.withFile(longest).file());
        e = assertThrows(IllegalArgumentException.class, () -> on.withFile(longest + "b"));
        assertEquals("the coredump file pattern is 1024 bytes long in UTF-8; the driver takes at most 1023",
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> on.withFile("/tmp/a\0b"));
        assertThrows(NullPointerException.class, () -> on.withFile(null));
    }
}
