package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.internal.load.LibrarySearch;
import dev.gatun.cuda.testing.BrokenLinkage;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Loading the process's driver never throws, and an unexpected failure keeps its cause. */
class DriverLoadTest {

    private static final LibrarySearch.FileCheck EVERY_FILE_EXISTS = new LibrarySearch.FileCheck() {
        @Override
        public boolean isRegularFile(Path path) {
            return true;
        }

        @Override
        public boolean isDirectory(Path path) {
            return false;
        }
    };

    @Test
    void anUnexpectedFailureBecomesTheTypedExceptionWithItsCauseOnEveryCall() {
        BrokenLinkage linkage = new BrokenLinkage();
        Map<String, String> props = Map.of("gatun.cuda.driver", "/opt/libcuda.so.1");
        Object state = Driver.load(new LibrarySearch(linkage, name -> null, props::get, EVERY_FILE_EXISTS));
        CudaUnavailableException e = assertInstanceOf(CudaUnavailableException.class, state);
        assertTrue(e.getMessage().contains("the loader broke"), e.getMessage());
        assertSame(linkage.failure, e.getCause());
        assertSame(linkage.failure, e.again().getCause(), "every later caller sees the cause too");
    }
}
