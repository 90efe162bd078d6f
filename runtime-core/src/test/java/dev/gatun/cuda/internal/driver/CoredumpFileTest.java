package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How {@link CoredumpFile} expands the driver's {@code %} sequences, and lists a directory for what it cannot. */
class CoredumpFileTest {

    @TempDir
    Path dir;

    @Test
    void hostPidAndPercentAreExpandedExactly() throws IOException {
        Path dump = Files.write(dir.resolve("core_gpu-host-7_4242_50%.nvcudmp"), new byte[1]);
        CoredumpFile found = CoredumpFile.find(dir + "/core_%h_%p_50%%.nvcudmp", 4242, "gpu-host-7");
        assertEquals(Optional.of(dump), found.file());
        assertEquals("the driver wrote a GPU coredump to " + dump + "; open it with: cuda-gdb -ex \"target cudacore "
                + dump + "\"", found.note());
    }

    @Test
    void withoutAHostNameOrForAnUnknownSequenceTheDirectoryIsListed() throws IOException {
        Path dump = Files.write(dir.resolve("core_somehost_4242.x"), new byte[1]);
        Files.write(dir.resolve("core_somehost_4243.x"), new byte[1]);
        assertEquals(Optional.of(dump), CoredumpFile.find(dir + "/core_%h_%p.x", 4242, null).file());
        assertEquals(Optional.of(dump), CoredumpFile.find(dir + "/core_%e_%p.x", 4242, "other").file());
        assertEquals(Optional.empty(), CoredumpFile.find(dir + "/core_%t_%p.x", 4242, "somehost").file(),
                "%t matches digits only");
    }

    @Test
    void aDirectoryOnlyAListingCouldExpandIsNamedAsThePattern() {
        CoredumpFile found = CoredumpFile.find(dir + "/run_%t/core", 1, "h");
        assertEquals(Optional.empty(), found.file());
        assertTrue(found.note().contains("file pattern " + dir + "/run_%t/core"), found.note());
    }

    @Test
    void theDirectoryCanHoldTheProcessId() throws IOException {
        Path sub = Files.createDirectory(dir.resolve("p77"));
        Path dump = Files.write(sub.resolve("core"), new byte[1]);
        assertEquals(Optional.of(dump), CoredumpFile.find(dir + "/p%p/core", 77, "h").file());
    }
}
