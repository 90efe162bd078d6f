package dev.gatun.cuda.internal.nvrtc;

import java.lang.foreign.MemorySegment;

/**
 * The NVRTC functions Gatun calls, with the generated bindings' exact signatures: pointers and
 * the {@code nvrtcProgram} handle as {@link MemorySegment}, {@code size_t} as {@code long};
 * every method returns the raw {@code nvrtcResult}.
 *
 * <p>The seam between the generated downcalls ({@link NativeNvrtcApi}) and the checked layer
 * ({@link NvrtcProgram}): CPU tests put a simulated compiler behind it. Nothing here checks a
 * result.
 */
public interface NvrtcApi {

    int nvrtcVersion(MemorySegment major, MemorySegment minor);

    int nvrtcCreateProgram(MemorySegment prog, MemorySegment src, MemorySegment name, int numHeaders,
            MemorySegment headers, MemorySegment includeNames);

    int nvrtcDestroyProgram(MemorySegment prog);

    int nvrtcAddNameExpression(MemorySegment prog, MemorySegment name_expression);

    int nvrtcCompileProgram(MemorySegment prog, int numOptions, MemorySegment options);

    int nvrtcGetProgramLogSize(MemorySegment prog, MemorySegment logSizeRet);

    int nvrtcGetProgramLog(MemorySegment prog, MemorySegment log);

    int nvrtcGetPTXSize(MemorySegment prog, MemorySegment ptxSizeRet);

    int nvrtcGetPTX(MemorySegment prog, MemorySegment ptx);

    int nvrtcGetCUBINSize(MemorySegment prog, MemorySegment cubinSizeRet);

    int nvrtcGetCUBIN(MemorySegment prog, MemorySegment cubin);

    int nvrtcGetLoweredName(MemorySegment prog, MemorySegment name_expression, MemorySegment lowered_name);
}
