package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Runs without a GPU: the helper the device test matches nvidia-smi rows with. */
class PciBusIdTest {

    @Test
    void nvidiaSmiAndCudaFormsOfOneAddressAreEqual() {
        assertEquals(PciBusId.parse("0000:00:06.0"), PciBusId.parse("00000000:00:06.0"));
        assertEquals(PciBusId.parse("0000:3b:00.0"), PciBusId.parse("00000000:3B:00.0"));
    }

    @Test
    void differentAddressesDiffer() {
        assertNotEquals(PciBusId.parse("0000:00:06.0"), PciBusId.parse("0000:00:07.0"));
        assertNotEquals(PciBusId.parse("0000:00:06.0"), PciBusId.parse("0001:00:06.0"));
        assertNotEquals(PciBusId.parse("0000:00:06.0"), PciBusId.parse("0000:00:06.1"));
    }

    @Test
    void printsTheCudaForm() {
        assertEquals("0000:3b:00.0", PciBusId.parse("00000000:3B:00.0").toString());
    }

    @Test
    void rejectsWhatIsNoPciAddress() {
        assertThrows(IllegalArgumentException.class, () -> PciBusId.parse("00:06.0"));
        assertThrows(IllegalArgumentException.class, () -> PciBusId.parse("[N/A]"));
    }
}
