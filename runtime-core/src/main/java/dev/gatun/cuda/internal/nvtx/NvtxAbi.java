package dev.gatun.cuda.internal.nvtx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * The NVTX v3 binary interface between a client (here, Gatun) and a tool's injection library, as
 * CUDA 13.0's {@code include/nvtx3} headers define it: the callback modules and the slot numbers
 * of their function tables ({@code nvtxDetail/nvtxTypes.h}), the export tables
 * ({@code nvtxDetail/nvtxTypes.h}, {@code nvtxDetail/nvtxImpl.h}) and the event attributes
 * structure ({@code nvToolsExt.h}).
 *
 * <p>Written by hand rather than generated: jextract on {@code nvToolsExt.h} yields the
 * client's inline functions (which forward to link-once globals that do not exist outside a C
 * program) and none of the protocol, which is a handful of enumerators, two small export
 * structures and one attributes structure. Each constant names the header line it copies; the
 * protocol's enumerators are append-only ("New constants must only be added directly above this
 * line"), so these values do not change under newer headers.
 */
final class NvtxAbi {

    private NvtxAbi() {
    }

    /** {@code NVTX_VERSION} (nvToolsExt.h:177), told to the tool and written in every event attributes structure. */
    static final int VERSION = 3;

    /** {@code NVTX_NO_PUSH_POP_TRACKING} (nvToolsExt.h:398): what push and pop return with no tool. */
    static final int NO_PUSH_POP_TRACKING = -2;

    // enum NvtxExportTableID (nvtxTypes.h:275-284)
    static final int ETID_CALLBACKS = 1;
    static final int ETID_VERSIONINFO = 3;

    // enum NvtxCallbackModule (nvtxTypes.h:148-160): the function tables a tool may ask for.
    static final int MODULE_CORE = 1;
    static final int MODULE_CORE2 = 5;
    /** One past the last module ({@code NVTX_CB_MODULE_SIZE}). */
    static final int MODULE_COUNT = 7;

    /**
     * Each module's {@code NVTX_CBID_*_SIZE} (nvtxTypes.h:181 CORE, 220 CUDA, 256 OPENCL, 234
     * CUDART, 204 CORE2, 270 SYNC), indexed by module: slot 0 of every table is the invalid id, so a
     * table has this many entries and then the terminating null.
     */
    static final int[] SLOTS = {0, 16, 9, 15, 7, 16, 7};

    // enum NvtxCallbackIdCore (nvtxTypes.h:162-183): the slots of the CORE table Gatun calls.
    static final int CORE_MARK_EX = 1;
    static final int CORE_RANGE_START_EX = 4;
    static final int CORE_RANGE_END = 7;
    static final int CORE_RANGE_PUSH_EX = 8;
    static final int CORE_RANGE_POP = 11;
    static final int CORE_NAME_CATEGORY_A = 12;

    // enum NvtxCallbackIdCore2 (nvtxTypes.h:185-206): the slots of the CORE2 table Gatun calls.
    static final int CORE2_DOMAIN_MARK_EX = 1;
    static final int CORE2_DOMAIN_RANGE_START_EX = 2;
    static final int CORE2_DOMAIN_RANGE_END = 3;
    static final int CORE2_DOMAIN_RANGE_PUSH_EX = 4;
    static final int CORE2_DOMAIN_RANGE_POP = 5;
    static final int CORE2_DOMAIN_NAME_CATEGORY_A = 8;
    static final int CORE2_DOMAIN_REGISTER_STRING_A = 10;
    static final int CORE2_DOMAIN_CREATE_A = 12;

    /** {@code NvtxExportTableCallbacks} (nvtxTypes.h:289-298): its size, then {@code GetModuleFunctionTable}. */
    static final StructLayout CALLBACKS = MemoryLayout.structLayout(JAVA_LONG.withName("struct_size"),
            ADDRESS.withName("GetModuleFunctionTable"));

    /**
     * {@code NvtxExportTableVersionInfo} (nvtxTypes.h:300-318): its size, the client's NVTX
     * version, a reserved word, then {@code SetInjectionNvtxVersion}.
     */
    static final StructLayout VERSION_INFO = MemoryLayout.structLayout(JAVA_LONG.withName("struct_size"),
            JAVA_INT.withName("version"), JAVA_INT.withName("reserved0"), ADDRESS.withName("SetInjectionNvtxVersion"));

    /**
     * {@code nvtxEventAttributes_v2} (nvToolsExt.h:592-683) on LP64: version and size (16 bits
     * each), category, color type, color, payload type, a reserved word, the 8-byte payload union,
     * the message type, and the message union (a pointer) at offset 40; 48 bytes in all.
     */
    static final StructLayout EVENT_ATTRIBUTES = MemoryLayout.structLayout(JAVA_SHORT.withName("version"),
            JAVA_SHORT.withName("size"), JAVA_INT.withName("category"), JAVA_INT.withName("colorType"),
            JAVA_INT.withName("color"), JAVA_INT.withName("payloadType"), JAVA_INT.withName("reserved0"),
            JAVA_LONG.withName("payload"), JAVA_INT.withName("messageType"), MemoryLayout.paddingLayout(4),
            ADDRESS.withName("message"));

    static final long VERSION_OFFSET = offset("version");
    static final long SIZE_OFFSET = offset("size");
    static final long CATEGORY_OFFSET = offset("category");
    static final long COLOR_TYPE_OFFSET = offset("colorType");
    static final long COLOR_OFFSET = offset("color");
    static final long PAYLOAD_TYPE_OFFSET = offset("payloadType");
    static final long PAYLOAD_OFFSET = offset("payload");
    static final long MESSAGE_TYPE_OFFSET = offset("messageType");
    static final long MESSAGE_OFFSET = offset("message");

    /** {@code NVTX_COLOR_ARGB} (nvToolsExt.h:441). */
    static final int COLOR_ARGB = 1;
    /** {@code NVTX_MESSAGE_TYPE_ASCII} (nvToolsExt.h:450). */
    static final int MESSAGE_ASCII = 1;
    /** {@code NVTX_MESSAGE_TYPE_REGISTERED} (nvToolsExt.h:453). */
    static final int MESSAGE_REGISTERED = 3;
    /** {@code NVTX_PAYLOAD_TYPE_INT64} (nvToolsExt.h:508). */
    static final int PAYLOAD_INT64 = 2;

    private static long offset(String field) {
        return EVENT_ATTRIBUTES.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }
}
