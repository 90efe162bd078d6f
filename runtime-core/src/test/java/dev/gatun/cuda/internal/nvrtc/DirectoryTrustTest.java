package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ssh-like checks on a directory whose files Gatun loads: owner, mode, the directories above, links. */
class DirectoryTrustTest {

    @TempDir
    Path temp;

    private final UserPrincipal me = currentUser();

    private static UserPrincipal currentUser() {
        try {
            return DirectoryTrust.currentUser();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private String problem(Path dir, UserPrincipal user) {
        return DirectoryTrust.problem(dir, true, user).orElse("trusted");
    }

    @Test
    void aPrivateDirectoryOfTheUserIsTrusted() throws IOException {
        Path dir = Files.createDirectory(temp.resolve("kernels"));
        assertEquals(Optional.empty(), DirectoryTrust.problem(dir, true, me));
    }

    @Test
    void aDirectoryOfAnotherUserIsNot() throws IOException {
        Path dir = Files.createDirectory(temp.resolve("kernels"));
        UserPrincipal stranger = () -> "stranger";
        // Run as root, the directories above belong to root, which is trusted; otherwise the
        // test's temporary directory, above it, belongs to this user too and is named first.
        assertTrue(problem(dir, stranger).contains("belongs to " + me.getName()), problem(dir, stranger));
        assertTrue(problem(temp, stranger).contains("it belongs to " + me.getName() + ", not to the current user stranger"),
                problem(temp, stranger));
    }

    @Test
    void aDirectoryAboveThatOthersCanWriteNeedsTheStickyBit() throws IOException {
        Path above = Files.createDirectory(temp.resolve("above"));
        Path dir = Files.createDirectory(above.resolve("kernels"));
        Files.setPosixFilePermissions(above, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertTrue(problem(dir, me).contains("the directory above it, " + above + ", is writable by its group or others "
                + "(rwxrwxrwx) without the sticky bit"), problem(dir, me));
        Files.setAttribute(above, "unix:mode", 01777); // as /tmp: others cannot rename what they do not own
        assertEquals("trusted", problem(dir, me));
    }

    @Test
    void onlySymbolicLinksAreCheckedWithoutOwnerAndMode() throws IOException {
        Path dir = Files.createDirectory(temp.resolve("shared"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertEquals(Optional.empty(), DirectoryTrust.problem(dir, false, () -> "stranger"));
        Path link = Files.createSymbolicLink(temp.resolve("link"), dir);
        assertTrue(DirectoryTrust.problem(link, false, me).orElseThrow().contains("is a symbolic link"));
        assertEquals(Optional.of(temp.resolve("missing") + " does not exist"),
                DirectoryTrust.problem(temp.resolve("missing"), true, me));
    }
}
