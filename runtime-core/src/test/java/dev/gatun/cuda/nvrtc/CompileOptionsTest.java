package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DeviceCapabilities;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompileOptionsTest {

    private static CompileOptions.Builder builder() {
        return CompileOptions.builder(CompileTarget.ptx(9, 0));
    }

    @Test
    void targetsNameTheirArchitecture() {
        assertEquals("compute_90", CompileTarget.ptx(9, 0).architecture());
        assertEquals("sm_120", CompileTarget.cubin(12, 0).architecture());
        assertEquals("--gpu-architecture=sm_86", CompileTarget.cubin(8, 6).gpuArchOption());
        DeviceCapabilities h100 = new DeviceCapabilities(9, 0, 132, 1024, 1024, 1024, 64, 2147483647, 65535, 65535, 49152, 232448, 52428800, 0);
        assertEquals(h100.ptxArchitecture(), CompileTarget.ptx(h100).architecture());
        assertEquals(h100.cubinArchitecture(), CompileTarget.cubin(h100).architecture());
    }

    @Test
    void anImpossibleComputeCapabilityIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> CompileTarget.ptx(0, 0));
        assertThrows(IllegalArgumentException.class, () -> CompileTarget.cubin(9, 10));
        assertThrows(IllegalArgumentException.class, () -> CompileTarget.cubin(9, -1));
    }

    @Test
    void defaultsAreEmpty() {
        CompileOptions options = CompileOptions.of(CompileTarget.ptx(9, 0));
        assertEquals(CompileOptions.DEFAULT_PROGRAM_NAME, options.programName());
        assertEquals(List.of(), options.options());
        assertEquals(List.of(), options.includeDirectories());
        assertEquals(List.of(), options.nameExpressions());
    }

    @Test
    void architectureOptionsAreRefusedBecauseTheTargetOwnsTheArchitecture() {
        for (String option : new String[] {"-arch=sm_80", "--gpu-architecture=compute_80", "--gpu-architecture=sm_90",
                " -arch=sm_90"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> builder().options(option).build(), option);
            assertTrue(e.getMessage().contains("CompileTarget"), e.getMessage());
        }
    }

    @Test
    void nulCharactersAndBlanksAreRefusedBeforeAnythingReachesNvrtc() {
        assertThrows(IllegalArgumentException.class, () -> builder().options("-DX=1\0").build());
        assertThrows(IllegalArgumentException.class, () -> builder().options(" ").build());
        assertThrows(IllegalArgumentException.class, () -> builder().options((String) null).build());
        assertThrows(IllegalArgumentException.class, () -> builder().programName("").build());
        assertThrows(IllegalArgumentException.class, () -> builder().programName("a\0b.cu").build());
        assertThrows(IllegalArgumentException.class, () -> builder().nameExpression("&k\0").build());
        assertThrows(IllegalArgumentException.class, () -> builder().nameExpression(null).build());
        assertThrows(NullPointerException.class, () -> builder().includeDirectory(null).build());
    }

    @Test
    void includeDirectoriesBecomeAbsoluteAndNormalized() {
        CompileOptions options = builder().includeDirectory(Path.of("include/../headers")).build();
        assertEquals(List.of(Path.of("headers").toAbsolutePath()), options.includeDirectories());
    }

    @Test
    void optionsKeepTheirOrderAndDuplicateNameExpressionsAreDroppedKeepingTheFirst() {
        CompileOptions options = builder().options("-std=c++17").options("-DA", "-DB").nameExpression("&b")
                .nameExpression("&a").nameExpression("&b").build();
        assertEquals(List.of("-std=c++17", "-DA", "-DB"), options.options());
        assertEquals(List.of("&b", "&a"), options.nameExpressions());
    }
}
