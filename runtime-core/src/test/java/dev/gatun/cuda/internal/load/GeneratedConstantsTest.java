package dev.gatun.cuda.internal.load;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.nvrtc.NvrtcResults;
import org.junit.jupiter.api.Test;

class GeneratedConstantsTest {

    @Test
    void namesNvrtcResultsFromTheHeader() {
        assertEquals("NVRTC_SUCCESS", NvrtcResults.name(0));
        assertEquals("NVRTC_ERROR_COMPILATION", NvrtcResults.name(Nvrtc.NVRTC_ERROR_COMPILATION()));
        assertEquals("NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
                NvrtcResults.name(Nvrtc.NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID()));
        assertEquals("nvrtcResult 9999", NvrtcResults.name(9999));
    }

    @Test
    void stillNamesCuResults() {
        assertEquals("CUDA_SUCCESS", CuResults.name(0));
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", CuResults.name(2));
        assertEquals("CUresult 99999", CuResults.name(99999));
    }

    @Test
    void onlyWantedNamesAreRead() {
        assertEquals("NVRTC_ERROR_OUT_OF_MEMORY",
                GeneratedConstants.names(Nvrtc.class, n -> n.startsWith("NVRTC_ERROR_")).get(1));
        assertEquals(null, GeneratedConstants.names(Nvrtc.class, n -> n.startsWith("NVRTC_ERROR_")).get(0));
    }
}
