package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Runs without a GPU: parsing of the nvidia-smi query the device test compares against. */
class NvidiaSmiTest {

    @Test
    void parsesOneRowPerGpu() {
        List<NvidiaSmi.Gpu> gpus = NvidiaSmi.parse("""
                0, NVIDIA H200, 9.0, 00000000:00:06.0, 143771, 606
                1, NVIDIA H200, 9.0, 00000000:00:07.0, 143771, 606
                """);
        assertEquals(List.of(
                new NvidiaSmi.Gpu(0, "NVIDIA H200", "9.0", PciBusId.parse("0000:00:06.0"), 143771, 606),
                new NvidiaSmi.Gpu(1, "NVIDIA H200", "9.0", PciBusId.parse("0000:00:07.0"), 143771, 606)), gpus);
    }

    @Test
    void rejectsRowsOfTheWrongShape() {
        assertThrows(IllegalArgumentException.class, () -> NvidiaSmi.parse("0, NVIDIA H200, 9.0, 00000000:00:06.0, 143771"));
        assertThrows(IllegalArgumentException.class,
                () -> NvidiaSmi.parse("0, NVIDIA H200, 9.0, 00000000:00:06.0, [N/A], 606"));
    }
}
