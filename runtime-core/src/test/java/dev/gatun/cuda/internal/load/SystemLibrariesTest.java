package dev.gatun.cuda.internal.load;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.testing.BrokenLinkage;
import org.junit.jupiter.api.Test;

/**
 * Opening the process's libraries never throws: the library, or the exception every user of it
 * gets (LibrarySearchTest checks the library found and the report of a search that found none).
 */
class SystemLibrariesTest {

    @Test
    void anUnexpectedFailureBecomesTheTypedExceptionWithItsCause() {
        BrokenLinkage linkage = new BrokenLinkage();
        Object state = SystemLibraries.open(new LibrarySearch(linkage, name -> null, name -> null,
                LibrarySearch.FileCheck.REAL), CudaLibraries.DRIVER);
        CudaUnavailableException e = assertInstanceOf(CudaUnavailableException.class, state);
        assertTrue(e.getMessage().startsWith("loading the CUDA driver failed unexpectedly: "), e.getMessage());
        assertTrue(e.getMessage().contains("the loader broke"), e.getMessage());
        assertSame(linkage.failure, e.getCause());
        assertSame(linkage.failure, e.again().getCause(), "every later caller sees the cause too");
    }
}
