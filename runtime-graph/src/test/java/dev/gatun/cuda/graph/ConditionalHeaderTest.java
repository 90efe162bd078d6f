package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ConditionalHeaderTest {

    @Test
    void theHeaderDeclaresCudasSetterAndGatunsHelpers() {
        String text = ConditionalHeader.text();
        assertTrue(text.contains("#ifndef GATUN_CONDITIONAL_CUH"), text);
        // NVRTC declares neither without the toolkit's headers; the header must, as CUDA does.
        assertTrue(text.contains("typedef unsigned long long cudaGraphConditionalHandle;"), text);
        assertTrue(text.contains("extern \"C\" __device__ __cudart_builtin__ void cudaGraphSetConditional("
                + "cudaGraphConditionalHandle handle,"), text);
        assertTrue(text.contains("#ifndef __CUDA_DEVICE_RUNTIME_API_H__"), "no clash with the toolkit's own declaration");
        assertTrue(text.contains("__device__ __forceinline__ void gatun_conditional_set(cudaGraphConditionalHandle "
                + "handle, unsigned int value)"), text);
        assertTrue(text.contains("__device__ __forceinline__ bool gatun_last_block(unsigned int* arrivals)"), text);
        assertTrue(text.contains("atomicInc(arrivals, blocks - 1) == blocks - 1"), text);
    }

    @Test
    void theIncludeDirectoryHoldsTheHeaderAndIsWrittenOnce() throws IOException {
        Path directory = CudaGraphs.conditionalIncludeDirectory();
        Path file = directory.resolve(ConditionalHeader.FILE_NAME);
        assertEquals(ConditionalHeader.text(), Files.readString(file, StandardCharsets.UTF_8));
        assertEquals(directory, ConditionalHeader.includeDirectory());
        assertNotEquals(LatchHeader.includeDirectory(), directory, "each header has its own directory");

        Files.delete(file);
        Path again = ConditionalHeader.includeDirectory().resolve(ConditionalHeader.FILE_NAME);
        assertEquals(ConditionalHeader.text(), Files.readString(again, StandardCharsets.UTF_8));
    }
}
