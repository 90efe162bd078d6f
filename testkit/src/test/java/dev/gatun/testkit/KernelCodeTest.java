package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Ptx;
import org.junit.jupiter.api.Test;

/** What the simulator reads of a kernel's real code: its parameters. */
class KernelCodeTest {

    @Test
    void aCudaDeclarationBecomesAPtxEntryWithTheParametersSizes() {
        KernelCode code = KernelCode.cuda("""
                #include <stdint.h>
                extern "C" __global__ void other(int n) {}
                extern "C" __global__ void __launch_bounds__(256)
                k(const float* __restrict__ x, unsigned n, unsigned long long m, double d, const int16_t s, bool b) {}
                """);
        assertEquals(Ptx.module("k", "u64", "u32", "u64", "f64", "u16", "u8"), code.simulatedPtx("k"));
        assertEquals(Ptx.module("other", "u32"), code.simulatedPtx("other"));
    }

    @Test
    void aKernelWithoutParametersHasNone() {
        assertEquals(Ptx.module("k"), KernelCode.cuda("extern \"C\" __global__ void k() {}").simulatedPtx("k"));
        assertEquals(Ptx.module("k"), KernelCode.cuda("extern \"C\" __global__ void k(void) {}").simulatedPtx("k"));
    }

    @Test
    void ptxIsLoadedAsItIs() {
        String ptx = Ptx.module("k", "u64", "f32");
        assertEquals(ptx, KernelCode.ptx(ptx).simulatedPtx("k"));
    }

    @Test
    void aKernelThatIsNotExternCIsRefusedSayingHowToDeclareIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelCode.cuda("__global__ void k(int n) {}").simulatedPtx("k"));
        assertTrue(e.getMessage().contains("declares no extern \"C\" __global__ void k(...)"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> KernelCode.cuda("extern \"C\" __global__ void k(int n) {}").simulatedPtx("kk"));
    }

    @Test
    void aParameterTheSimulatorCannotSizeIsRefusedNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelCode.cuda("extern \"C\" __global__ void k(float* y, Params p) {}").simulatedPtx("k"));
        assertTrue(e.getMessage().contains("parameter 'Params p'"), e.getMessage());
        assertTrue(e.getMessage().contains("KernelCode.ptx"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> KernelCode.cuda("extern \"C\" __global__ void k(n) {}").simulatedPtx("k"));
    }
}
