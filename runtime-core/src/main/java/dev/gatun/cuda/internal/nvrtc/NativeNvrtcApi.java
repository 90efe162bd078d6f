package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import java.lang.foreign.MemorySegment;

/**
 * The generated NVRTC downcalls behind the {@link NvrtcApi} seam, nothing else.
 *
 * <p>Safety, for every method: the generated holders resolve their symbol in the libraries
 * registered with this class loader, which is where {@code NvrtcLibrary} loaded NVRTC before it
 * hands this instance out. Every NVRTC function Gatun calls exists since CUDA 11.1, and
 * {@code NvrtcLibrary} refuses an NVRTC older than 12, so no holder can fail to resolve. The per-call comments say why the arguments are
 * sound; {@link NvrtcProgram} allocates them all in one confined arena that outlives the calls.
 */
public final class NativeNvrtcApi implements NvrtcApi {

    public static final NativeNvrtcApi INSTANCE = new NativeNvrtcApi();

    private NativeNvrtcApi() {
    }

    @Override
    public int nvrtcVersion(MemorySegment major, MemorySegment minor) {
        // Safety: writes one int through each pointer; the caller passes two int-sized segments.
        return Nvrtc.nvrtcVersion(major, minor);
    }

    @Override
    public int nvrtcCreateProgram(MemorySegment prog, MemorySegment src, MemorySegment name, int numHeaders,
            MemorySegment headers, MemorySegment includeNames) {
        // Safety: src and name are NUL-terminated copies made by Arena.allocateFrom; NVRTC copies
        // both before returning. prog is a pointer-sized out slot.
        return Nvrtc.nvrtcCreateProgram(prog, src, name, numHeaders, headers, includeNames);
    }

    @Override
    public int nvrtcDestroyProgram(MemorySegment prog) {
        // Safety: prog points at the handle nvrtcCreateProgram wrote; NvrtcProgram calls this
        // exactly once per created program, after its last other use.
        return Nvrtc.nvrtcDestroyProgram(prog);
    }

    @Override
    public int nvrtcAddNameExpression(MemorySegment prog, MemorySegment name_expression) {
        // Safety: prog is a live program not yet compiled; the expression is a NUL-terminated
        // copy that NVRTC copies in turn.
        return Nvrtc.nvrtcAddNameExpression(prog, name_expression);
    }

    @Override
    public int nvrtcCompileProgram(MemorySegment prog, int numOptions, MemorySegment options) {
        // Safety: options is an array of exactly numOptions pointers, each to a NUL-terminated
        // string in the same arena, all alive until this synchronous call returns.
        return Nvrtc.nvrtcCompileProgram(prog, numOptions, options);
    }

    @Override
    public int nvrtcGetProgramLogSize(MemorySegment prog, MemorySegment logSizeRet) {
        // Safety: logSizeRet is a size_t-sized out slot; prog is live.
        return Nvrtc.nvrtcGetProgramLogSize(prog, logSizeRet);
    }

    @Override
    public int nvrtcGetProgramLog(MemorySegment prog, MemorySegment log) {
        // Safety: log has exactly the size nvrtcGetProgramLogSize reported (NUL included), and
        // NVRTC writes no more than that.
        return Nvrtc.nvrtcGetProgramLog(prog, log);
    }

    @Override
    public int nvrtcGetPTXSize(MemorySegment prog, MemorySegment ptxSizeRet) {
        // Safety: ptxSizeRet is a size_t-sized out slot; prog is live and compiled.
        return Nvrtc.nvrtcGetPTXSize(prog, ptxSizeRet);
    }

    @Override
    public int nvrtcGetPTX(MemorySegment prog, MemorySegment ptx) {
        // Safety: ptx has exactly the size nvrtcGetPTXSize reported (NUL included).
        return Nvrtc.nvrtcGetPTX(prog, ptx);
    }

    @Override
    public int nvrtcGetCUBINSize(MemorySegment prog, MemorySegment cubinSizeRet) {
        // Safety: cubinSizeRet is a size_t-sized out slot; prog is live and compiled.
        return Nvrtc.nvrtcGetCUBINSize(prog, cubinSizeRet);
    }

    @Override
    public int nvrtcGetCUBIN(MemorySegment prog, MemorySegment cubin) {
        // Safety: cubin has exactly the size nvrtcGetCUBINSize reported.
        return Nvrtc.nvrtcGetCUBIN(prog, cubin);
    }

    @Override
    public int nvrtcGetLoweredName(MemorySegment prog, MemorySegment name_expression, MemorySegment lowered_name) {
        // Safety: the expression was added to this program before it compiled; lowered_name is
        // a pointer-sized out slot, and the string it receives lives until the program is
        // destroyed, which happens only after NvrtcProgram has copied it.
        return Nvrtc.nvrtcGetLoweredName(prog, name_expression, lowered_name);
    }
}
