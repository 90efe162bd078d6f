package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Where the default cache lives and how it is switched off. */
class KernelCacheTest {

    private final Map<String, String> properties = new HashMap<>(Map.of("user.home", "/home/ada"));
    private final Map<String, String> environment = new HashMap<>();

    private KernelCache configured() {
        return KernelCache.configured(properties::get, environment::get);
    }

    @Test
    void withNothingSetTheCacheIsUnderTheHomeDirectory() {
        assertEquals(Optional.of(Path.of("/home/ada/.cache/gatun/kernels")), configured().directory());
        assertTrue(configured().isEnabled());
    }

    @Test
    void xdgCacheHomeIsUsedWhenAbsolute() {
        environment.put("XDG_CACHE_HOME", "/var/cache/ada");
        assertEquals(Optional.of(Path.of("/var/cache/ada/gatun/kernels")), configured().directory());
        environment.put("XDG_CACHE_HOME", "relative/cache");
        assertEquals(Optional.of(Path.of("/home/ada/.cache/gatun/kernels")), configured().directory());
    }

    @Test
    void theDirectoryPropertyWinsOverTheEnvironment() {
        environment.put("XDG_CACHE_HOME", "/var/cache/ada");
        properties.put(KernelCache.DIRECTORY_PROPERTY, "/srv/kernels");
        assertEquals(Optional.of(Path.of("/srv/kernels")), configured().directory());
    }

    @Test
    void offSwitchesTheCacheOffWhateverElseIsSet() {
        properties.put(KernelCache.DIRECTORY_PROPERTY, "/srv/kernels");
        for (String off : new String[] {"off", "OFF", " false "}) {
            properties.put(KernelCache.SWITCH_PROPERTY, off);
            assertFalse(configured().isEnabled(), off);
            assertEquals(Optional.empty(), configured().directory());
        }
        properties.put(KernelCache.SWITCH_PROPERTY, "on");
        assertEquals(Optional.of(Path.of("/srv/kernels")), configured().directory());
    }

    @Test
    void aMistypedSwitchIsAClearError() {
        properties.put(KernelCache.SWITCH_PROPERTY, "no");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, this::configured);
        assertTrue(e.getMessage().contains("gatun.kernelCache") && e.getMessage().contains("'no'"), e.getMessage());
    }

    @Test
    void aRelativeDirectoryIsAClearErrorNotAPathUnderTheWorkingDirectory() {
        properties.put(KernelCache.DIRECTORY_PROPERTY, "relative/kernels");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, this::configured);
        assertEquals("system property gatun.kernelCache.dir is 'relative/kernels', which is not an absolute path; "
                + "set it to an absolute path", e.getMessage());
    }

    @Test
    void theAuthenticatedModeIsSwitchedByTrueOrFalseAndItsKeyLivesInTheUsersCacheDirectory() {
        assertFalse(configured().isAuthenticated());
        properties.put(KernelCache.AUTHENTICATE_PROPERTY, "true");
        assertTrue(configured().isAuthenticated());
        assertEquals(Optional.of(Path.of("/home/ada/.cache/gatun/kernel-cache.key")), configured().keyFile());
        properties.put(KernelCache.KEY_FILE_PROPERTY, "/srv/keys/ada.key");
        assertEquals(Optional.of(Path.of("/srv/keys/ada.key")), configured().keyFile());
        properties.put(KernelCache.AUTHENTICATE_PROPERTY, "yes");
        IllegalArgumentException yes = assertThrows(IllegalArgumentException.class, this::configured);
        assertTrue(yes.getMessage().startsWith("system property gatun.kernelCache.authenticate is 'yes'; set it to true "
                + "or false"), yes.getMessage());
        properties.put(KernelCache.AUTHENTICATE_PROPERTY, "false");
        IllegalArgumentException keyAlone = assertThrows(IllegalArgumentException.class, this::configured);
        assertTrue(keyAlone.getMessage().contains("gatun.kernelCache.keyFile is set, but gatun.kernelCache.authenticate "
                + "is not true"), keyAlone.getMessage());
    }

    @Test
    void theEntryCapIsABoundedNumberOfBytes() {
        assertEquals(256L << 20, configured().maxEntryBytes());
        properties.put(KernelCache.MAX_ENTRY_BYTES_PROPERTY, "1048576");
        assertEquals(1 << 20, configured().maxEntryBytes());
        for (String bad : new String[] {"0", "1G", "4294967296"}) {
            properties.put(KernelCache.MAX_ENTRY_BYTES_PROPERTY, bad);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, this::configured, bad);
            assertTrue(e.getMessage().contains("gatun.kernelCache.maxEntryBytes is '" + bad + "'"), e.getMessage());
        }
    }

    @Test
    void theTotalCapIsANumberOfBytesOfAtLeastOne() {
        assertEquals(256L << 20, configured().maxBytes());
        properties.put(KernelCache.MAX_BYTES_PROPERTY, " 1073741824 ");
        assertEquals(1L << 30, configured().maxBytes());
        for (String bad : new String[] {"0", "-1", "1G", ""}) {
            properties.put(KernelCache.MAX_BYTES_PROPERTY, bad);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, this::configured, bad);
            assertEquals("system property gatun.kernelCache.maxBytes is '" + bad + "'; set it to a whole number of bytes "
                    + "of at least 1; to keep no cache at all, set gatun.kernelCache=off", e.getMessage());
        }
        assertEquals(0, KernelCache.disabled().maxBytes());
    }

    @Test
    void aDisabledCacheSaysSo() {
        assertFalse(KernelCache.disabled().isEnabled());
        assertEquals("KernelCache[disabled]", KernelCache.disabled().toString());
        assertEquals(Optional.empty(), KernelCache.disabled().load("0".repeat(64)));
    }
}
