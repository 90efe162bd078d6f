package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The include directory of a shipped header is the same path in every JVM of the user, since the
 * kernel cache's key hashes include-directory paths (newcomer review 2026-12-03, finding 5), and
 * is used only while it is the user's alone.
 */
class DeviceHeaderTest {

    @TempDir
    Path temp;

    @Test
    void everyJvmGetsTheSameDirectoryForTheSameHeader() throws IOException {
        // Two DeviceHeaders are what two JVMs have: each its own, nothing shared in memory.
        Path first = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-").includeDirectory();
        Path second = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-").includeDirectory();
        assertEquals(first, second, "a kernel that includes the header would miss the cache in every new JVM");
        assertEquals(LatchHeader.text(), Files.readString(first.resolve(LatchHeader.FILE_NAME), StandardCharsets.UTF_8));
        Path conditional = new DeviceHeader(ConditionalHeader.FILE_NAME, "gatun-conditional-").includeDirectory();
        assertNotEquals(first, conditional, "another header, another directory");
    }

    @Test
    void theDirectoryIsPrivateAndNamedAfterTheHeadersDigest() throws IOException {
        Path dir = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-", temp).includeDirectory();
        assertEquals(temp, dir.getParent());
        assertTrue(dir.getFileName().toString().matches("gatun-latch-[0-9a-f]{16}-.+"), dir.toString());
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        try (var files = Files.list(temp)) {
            assertEquals(1, files.count(), "no temporary file left behind");
        }
    }

    @Test
    void aDirectoryOthersCanWriteIsNotUsed() throws IOException {
        Path shared = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-", temp).includeDirectory();
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.writeString(shared.resolve(LatchHeader.FILE_NAME), "#error planted\n");
        Path used = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-", temp).includeDirectory();
        assertNotEquals(shared, used, "someone else could change the header under the user's kernels");
        assertEquals(LatchHeader.text(), Files.readString(used.resolve(LatchHeader.FILE_NAME), StandardCharsets.UTF_8));
    }

    @Test
    void aSymbolicLinkInItsPlaceIsNotFollowed() throws IOException {
        Path shared = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-", temp).includeDirectory();
        Path elsewhere = Files.createDirectory(temp.resolve("elsewhere"));
        Files.delete(shared.resolve(LatchHeader.FILE_NAME));
        Files.delete(shared);
        Files.createSymbolicLink(shared, elsewhere);
        Path used = new DeviceHeader(LatchHeader.FILE_NAME, "gatun-latch-", temp).includeDirectory();
        assertNotEquals(shared, used);
        assertFalse(Files.exists(elsewhere.resolve(LatchHeader.FILE_NAME)), "nothing written through the link");
    }
}
