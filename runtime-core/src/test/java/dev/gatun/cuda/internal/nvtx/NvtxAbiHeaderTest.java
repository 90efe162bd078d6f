package dev.gatun.cuda.internal.nvtx;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.testing.Gcc;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link NvtxAbi}'s hand-written constants against CUDA 13.0's NVTX headers, by the C compiler:
 * each constant becomes a {@code _Static_assert} on the header's own {@code offsetof},
 * {@code sizeof} or enumerator. Needs the headers (the CUDA toolkit's include directory); a
 * machine without them reports this test as skipped, with the reason.
 */
class NvtxAbiHeaderTest {

    @Test
    void everyConstantIsTheHeadersOwn() throws Exception {
        assumeTrue(Files.isRegularFile(Gcc.CUDA_INCLUDE.resolve("nvtx3/nvToolsExt.h")),
                "needs the CUDA headers at " + Gcc.CUDA_INCLUDE);
        String source = "#include <stddef.h>\n#include <nvtx3/nvToolsExt.h>\n"
                + near("sizeof(nvtxEventAttributes_t)", NvtxAbi.EVENT_ATTRIBUTES.byteSize())
                + near("offsetof(nvtxEventAttributes_t, version)", NvtxAbi.VERSION_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, size)", NvtxAbi.SIZE_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, category)", NvtxAbi.CATEGORY_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, colorType)", NvtxAbi.COLOR_TYPE_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, color)", NvtxAbi.COLOR_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, payloadType)", NvtxAbi.PAYLOAD_TYPE_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, payload)", NvtxAbi.PAYLOAD_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, messageType)", NvtxAbi.MESSAGE_TYPE_OFFSET)
                + near("offsetof(nvtxEventAttributes_t, message)", NvtxAbi.MESSAGE_OFFSET)
                + near("sizeof(NvtxExportTableCallbacks)", NvtxAbi.CALLBACKS.byteSize())
                + near("sizeof(NvtxExportTableVersionInfo)", NvtxAbi.VERSION_INFO.byteSize())
                + near("offsetof(NvtxExportTableVersionInfo, SetInjectionNvtxVersion)", 16)
                + near("NVTX_VERSION", NvtxAbi.VERSION)
                + near("NVTX_NO_PUSH_POP_TRACKING", NvtxAbi.NO_PUSH_POP_TRACKING)
                + near("NVTX_ETID_CALLBACKS", NvtxAbi.ETID_CALLBACKS)
                + near("NVTX_ETID_VERSIONINFO", NvtxAbi.ETID_VERSIONINFO)
                + near("NVTX_CB_MODULE_CORE", NvtxAbi.MODULE_CORE)
                + near("NVTX_CB_MODULE_CORE2", NvtxAbi.MODULE_CORE2)
                + near("NVTX_CB_MODULE_SIZE", NvtxAbi.MODULE_COUNT)
                + near("NVTX_CBID_CORE_SIZE", NvtxAbi.SLOTS[1])
                + near("NVTX_CBID_CUDA_SIZE", NvtxAbi.SLOTS[2])
                + near("NVTX_CBID_OPENCL_SIZE", NvtxAbi.SLOTS[3])
                + near("NVTX_CBID_CUDART_SIZE", NvtxAbi.SLOTS[4])
                + near("NVTX_CBID_CORE2_SIZE", NvtxAbi.SLOTS[5])
                + near("NVTX_CBID_SYNC_SIZE", NvtxAbi.SLOTS[6])
                + near("NVTX_CBID_CORE_MarkEx", NvtxAbi.CORE_MARK_EX)
                + near("NVTX_CBID_CORE_RangeStartEx", NvtxAbi.CORE_RANGE_START_EX)
                + near("NVTX_CBID_CORE_RangeEnd", NvtxAbi.CORE_RANGE_END)
                + near("NVTX_CBID_CORE_RangePushEx", NvtxAbi.CORE_RANGE_PUSH_EX)
                + near("NVTX_CBID_CORE_RangePop", NvtxAbi.CORE_RANGE_POP)
                + near("NVTX_CBID_CORE_NameCategoryA", NvtxAbi.CORE_NAME_CATEGORY_A)
                + near("NVTX_CBID_CORE2_DomainMarkEx", NvtxAbi.CORE2_DOMAIN_MARK_EX)
                + near("NVTX_CBID_CORE2_DomainRangeStartEx", NvtxAbi.CORE2_DOMAIN_RANGE_START_EX)
                + near("NVTX_CBID_CORE2_DomainRangeEnd", NvtxAbi.CORE2_DOMAIN_RANGE_END)
                + near("NVTX_CBID_CORE2_DomainRangePushEx", NvtxAbi.CORE2_DOMAIN_RANGE_PUSH_EX)
                + near("NVTX_CBID_CORE2_DomainRangePop", NvtxAbi.CORE2_DOMAIN_RANGE_POP)
                + near("NVTX_CBID_CORE2_DomainNameCategoryA", NvtxAbi.CORE2_DOMAIN_NAME_CATEGORY_A)
                + near("NVTX_CBID_CORE2_DomainRegisterStringA", NvtxAbi.CORE2_DOMAIN_REGISTER_STRING_A)
                + near("NVTX_CBID_CORE2_DomainCreateA", NvtxAbi.CORE2_DOMAIN_CREATE_A)
                + near("NVTX_COLOR_ARGB", NvtxAbi.COLOR_ARGB)
                + near("NVTX_MESSAGE_TYPE_ASCII", NvtxAbi.MESSAGE_ASCII)
                + near("NVTX_MESSAGE_TYPE_REGISTERED", NvtxAbi.MESSAGE_REGISTERED)
                + near("NVTX_PAYLOAD_TYPE_INT64", NvtxAbi.PAYLOAD_INT64);
        Gcc.check(source, List.of("-I" + Gcc.CUDA_INCLUDE));
    }

    /** A static assertion that the C expression equals Java's value, naming both when not. */
    private static String near(String c, long java) {
        return "_Static_assert((long) (" + c + ") == " + java + "L, \"" + c + " is not " + java + " (NvtxAbi)\");\n";
    }
}
