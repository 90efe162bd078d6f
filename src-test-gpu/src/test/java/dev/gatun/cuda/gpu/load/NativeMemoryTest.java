package dev.gatun.cuda.gpu.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class NativeMemoryTest {

    @Test
    void theCommittedBytesComeFromTheTotalLine() {
        String summary = """

                Native Memory Tracking:

                (Omitting categories weighting less than 1KB)

                Total: reserved=1502397KB, committed=91325KB
                       malloc: 19789KB #57634
                       mmap:   reserved=1482608KB, committed=71536KB

                -                 Java Heap (reserved=1048576KB, committed=65536KB)
                """;
        assertEquals(OptionalLong.of(91325L * 1024), NativeMemory.committedBytes(summary));
    }

    @Test
    void withoutTrackingThereIsNoFigure() {
        assertEquals(OptionalLong.empty(), NativeMemory.committedBytes("Native memory tracking is not enabled\n"));
    }

    @Test
    void theDiagnosticCommandAnswersInThisJvm() {
        // Surefire's JVM runs without -XX:NativeMemoryTracking: the command still answers, saying so.
        String summary = NativeMemory.summary();
        assertTrue(summary.contains("Native memory tracking is not enabled") || summary.contains("Total: reserved="), summary);
    }
}
