package dev.gatun.cuda.internal.nvrtc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.Collections;
import java.util.Optional;
import java.util.Set;

/**
 * Whether a directory may hold files Gatun loads as code (kernel cache entries) or keys: as ssh
 * checks its files, the directory must belong to the current user and be writable by nobody
 * else, each directory above it must belong to the user or to root and be writable by others
 * only with the sticky bit (which keeps them from renaming what they do not own), and no
 * component of the path may be a symbolic link (which someone could point elsewhere). A
 * directory that fails is not used; the reason says which check failed and what to do.
 *
 * <p>Where the file system has no POSIX attributes, owner and mode cannot be checked: such a
 * directory is refused unless only the symbolic links are to be checked (the authenticated
 * mode, whose entries are verified one by one).
 */
public final class DirectoryTrust {

    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final int STICKY = 01000;
    private static final Set<PosixFilePermission> WRITE_BY_OTHERS =
            Set.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE);

    private DirectoryTrust() {
    }

    /** The user the checks trust: this process's. */
    public static UserPrincipal currentUser() throws IOException {
        // /proc/self belongs to the process's user, with or without a passwd entry (containers);
        // elsewhere, user.name names it.
        Path self = Path.of("/proc/self");
        if (Files.exists(self)) {
            return Files.getOwner(self);
        }
        return self.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(System.getProperty("user.name"));
    }

    /**
     * Why {@code dir} cannot be trusted, or empty when it can.
     *
     * @param ownerAndMode whether to check owners and modes too, or only symbolic links
     * @param user the user who must own {@code dir} (see {@link #currentUser()})
     */
    public static Optional<String> problem(Path dir, boolean ownerAndMode, UserPrincipal user) {
        Path absolute = dir.toAbsolutePath().normalize();
        Path component = absolute.getRoot();
        try {
            for (int i = 0; i <= absolute.getNameCount(); i++) {
                component = i == 0 ? component : component.resolve(absolute.getName(i - 1));
                Optional<String> p = problemOf(component, component.equals(absolute), ownerAndMode, user, absolute);
                if (p.isPresent()) {
                    return p;
                }
            }
            return Optional.empty();
        } catch (NoSuchFileException e) {
            return Optional.of(component + " does not exist");
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.of("its attributes cannot be read (" + e + ")");
        }
    }

    private static Optional<String> problemOf(Path component, boolean last, boolean ownerAndMode, UserPrincipal user,
            Path dir) throws IOException {
        BasicFileAttributes basic = Files.readAttributes(component, BasicFileAttributes.class, NOFOLLOW);
        if (basic.isSymbolicLink()) {
            return Optional.of("its path component " + component + " is a symbolic link; name the real directory ("
                    + realPath(dir) + ") instead");
        }
        if (!basic.isDirectory()) {
            return Optional.of(component + " is not a directory");
        }
        if (!ownerAndMode) {
            return Optional.empty();
        }
        if (Files.getFileAttributeView(component, PosixFileAttributeView.class, NOFOLLOW) == null) {
            return Optional.of("the owner and mode of " + component + " cannot be checked (the file system has no POSIX "
                    + "attributes); use the authenticated mode, which checks each entry instead");
        }
        PosixFileAttributes posix = Files.readAttributes(component, PosixFileAttributes.class, NOFOLLOW);
        boolean othersWrite = !Collections.disjoint(posix.permissions(), WRITE_BY_OTHERS);
        String mode = PosixFilePermissions.toString(posix.permissions());
        if (last) {
            if (!posix.owner().equals(user)) {
                return Optional.of("it belongs to " + posix.owner().getName() + ", not to the current user "
                        + user.getName() + ", who alone may write what Gatun loads from it");
            }
            if (othersWrite) {
                return Optional.of("it is writable by its group or others (" + mode + "); make it writable by its owner "
                        + "only (chmod go-w; Gatun creates it 0700)");
            }
        } else {
            if (!posix.owner().equals(user) && !isRoot(component, posix.owner())) {
                return Optional.of("the directory above it, " + component + ", belongs to " + posix.owner().getName()
                        + ", who could replace it");
            }
            if (othersWrite && !sticky(component)) {
                return Optional.of("the directory above it, " + component + ", is writable by its group or others ("
                        + mode + ") without the sticky bit, so they could replace it");
            }
        }
        return Optional.empty();
    }

    private static boolean isRoot(Path file, UserPrincipal owner) {
        try {
            return ((Number) Files.getAttribute(file, "unix:uid", NOFOLLOW)).intValue() == 0;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return owner.getName().equals("root"); // no "unix" view: the name is all there is
        }
    }

    private static boolean sticky(Path dir) {
        try {
            return (((Number) Files.getAttribute(dir, "unix:mode", NOFOLLOW)).intValue() & STICKY) != 0;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return false; // cannot tell: as if not, the safe side
        }
    }

    private static String realPath(Path dir) {
        try {
            return dir.toRealPath().toString();
        } catch (IOException e) {
            return "the link's target";
        }
    }
}
