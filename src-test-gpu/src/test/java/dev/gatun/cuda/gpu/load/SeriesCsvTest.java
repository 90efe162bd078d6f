package dev.gatun.cuda.gpu.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class SeriesCsvTest {

    @Test
    void oneRowPerSampleAndOneColumnPerSeries() {
        Series a = new Series("device memory, used", "MiB", 1);
        Series b = new Series("threads", "threads", 1);
        a.add(0, 512);
        b.add(0, 21);
        a.add(10.5, 513);
        b.add(10.5, 22);
        assertEquals("""
                seconds,device memory  used (MiB),threads (threads)
                0.000,512,21
                10.500,513,22
                """, SeriesCsv.render(List.of(a, b)));
    }

    @Test
    void seriesOfDifferentLengthsAreRefused() {
        Series a = new Series("a", "u", 1);
        Series b = new Series("b", "u", 1);
        a.add(0, 1);
        assertThrows(IllegalArgumentException.class, () -> SeriesCsv.render(List.of(a, b)));
    }
}
