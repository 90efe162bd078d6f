package dev.gatun.cuda.gpu.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class SoakOptionsTest {

    @Test
    void defaultsAreTheIssuesFigures() {
        assertEquals(new SoakOptions(1_000_000, 1_000_000, 300, 10, 60, Path.of("results")),
                SoakOptions.parse(new String[0], Path.of("results")));
    }

    @Test
    void everyOptionIsRead() {
        assertEquals(new SoakOptions(5, 6, 7.5, 1, 2, Path.of("/tmp/x")), SoakOptions.parse(new String[] {"--cycles", "5",
            "--launches", "6", "--seconds", "7.5", "--sample-seconds", "1", "--warmup-seconds", "2", "--out", "/tmp/x"},
                Path.of(".")));
    }

    @Test
    void badCommandLinesAreRefusedWithWhatIsWrong() {
        Path here = Path.of(".");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SoakOptions.parse(new String[] {"--cycle", "5"}, here))
                .getMessage().startsWith("unknown option --cycle"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SoakOptions.parse(new String[] {"--cycles"}, here))
                .getMessage().contains("needs a value"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SoakOptions.parse(new String[] {"--seconds", "x"}, here))
                .getMessage().contains("needs a number"));
        assertThrows(IllegalArgumentException.class, () -> SoakOptions.parse(new String[] {"--sample-seconds", "0"}, here));
    }
}
