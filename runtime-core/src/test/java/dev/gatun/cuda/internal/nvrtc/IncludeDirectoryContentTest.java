package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import java.io.IOException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The caller's include directories count in the cache key by what they hold, never by where they are. */
class IncludeDirectoryContentTest {

    private static final List<Path> TOOLKIT = List.of(Path.of("/usr/local/cuda/include"));

    @TempDir
    Path temp;

    private Path headers(String name) throws IOException {
        Path dir = Files.createDirectories(temp.resolve(name));
        Files.writeString(dir.resolve("gatun_test.cuh"), "#define GATUN_TEST 1\n");
        Files.createDirectories(dir.resolve("sub"));
        Files.writeString(dir.resolve("sub").resolve("inner.h"), "int inner;\n");
        return dir;
    }

    private static String key(Path... includeDirectories) throws IOException {
        CompileOptions.Builder options = CompileOptions.builder(CompileTarget.ptx(9, 0));
        for (Path dir : includeDirectories) {
            options.includeDirectory(dir);
        }
        return CacheKey.of(new CompileRequest("#include \"gatun_test.cuh\"\n", options.build(), TOOLKIT, "13.0"));
    }

    /** Computed with Python's hashlib from the documented encoding, not by this class. */
    @Test
    void theDigestOfATreeIsPinned() throws IOException {
        assertEquals("9174d992ff1ed1e06509f943010bedb7dfffa7b0794b9443e9d46eb10095e1e4",
                IncludeDirectoryContent.digest(headers("pinned")));
    }

    @Test
    void theSameHeadersInTwoDirectoriesGiveTheSameKey() throws IOException {
        Path first = headers("gatun-latch-1234");
        Path second = headers("gatun-latch-5678");
        assertEquals(key(first), key(second));
    }

    @Test
    void aHeaderChangedInPlaceChangesTheKey() throws IOException {
        Path dir = headers("h");
        String before = key(dir);
        Files.writeString(dir.resolve("sub").resolve("inner.h"), "int inner2;\n");
        assertNotEquals(before, key(dir));
    }

    @Test
    void aHeaderAddedOrRenamedChangesTheKey() throws IOException {
        Path dir = headers("h");
        String before = key(dir);
        Files.writeString(dir.resolve("extra.h"), "");
        String added = key(dir);
        assertNotEquals(before, added);
        Files.move(dir.resolve("extra.h"), dir.resolve("other.h"));
        assertNotEquals(added, key(dir));
    }

    @Test
    void theOrderOfTheDirectoriesCounts() throws IOException {
        Path a = headers("a");
        Path b = Files.createDirectories(temp.resolve("b"));
        Files.writeString(b.resolve("gatun_test.cuh"), "#define GATUN_TEST 2\n");
        assertNotEquals(key(a, b), key(b, a));
    }

    @Test
    void anAbsentDirectoryAnEmptyOneAndAFileDiffer() throws IOException {
        Path absent = temp.resolve("absent");
        Path empty = Files.createDirectories(temp.resolve("empty"));
        Path file = Files.writeString(temp.resolve("file"), "");
        assertNotEquals(IncludeDirectoryContent.digest(absent), IncludeDirectoryContent.digest(empty));
        assertNotEquals(IncludeDirectoryContent.digest(empty), IncludeDirectoryContent.digest(file));
        assertNotEquals(IncludeDirectoryContent.digest(absent), IncludeDirectoryContent.digest(file));
    }

    @Test
    void aLinkedHeaderCountsByWhatItPointsTo() throws IOException {
        Path dir = Files.createDirectories(temp.resolve("linked"));
        Path target = Files.writeString(temp.resolve("real.h"), "int one;\n");
        Files.createSymbolicLink(dir.resolve("gatun_test.cuh"), target);
        String before = key(dir);
        Files.writeString(target, "int two;\n");
        assertNotEquals(before, key(dir));
    }

    @Test
    void aLinkLoopFailsTheKey() throws IOException {
        Path dir = headers("loop");
        Files.createSymbolicLink(dir.resolve("sub").resolve("back"), dir);
        assertThrows(FileSystemLoopException.class, () -> key(dir));
    }
}
