package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.load.Downcalls;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The NVRTC downcalls behind the {@link NvrtcApi} seam, nothing else: handles resolved once in
 * the NVRTC library this instance was made for (its own {@link SymbolLookup}, see
 * {@link Downcalls}) and kept in final fields.
 *
 * <p>Safety, for every method: each descriptor is the one jextract generated from
 * {@code nvrtc.h}. Every NVRTC function Gatun calls exists since CUDA 11.1, and
 * {@code NvrtcLibrary} refuses an NVRTC older than 12, so every handle is a real downcall. The
 * per-call comments say why the arguments are sound; {@link NvrtcProgram} allocates them all in
 * one confined arena that outlives the calls.
 */
public final class NativeNvrtcApi implements NvrtcApi {

    private final MethodHandle nvrtcVersion;
    private final MethodHandle nvrtcCreateProgram;
    private final MethodHandle nvrtcDestroyProgram;
    private final MethodHandle nvrtcAddNameExpression;
    private final MethodHandle nvrtcCompileProgram;
    private final MethodHandle nvrtcGetProgramLogSize;
    private final MethodHandle nvrtcGetProgramLog;
    private final MethodHandle nvrtcGetPTXSize;
    private final MethodHandle nvrtcGetPTX;
    private final MethodHandle nvrtcGetCUBINSize;
    private final MethodHandle nvrtcGetCUBIN;
    private final MethodHandle nvrtcGetLoweredName;

    /**
     * @param symbols the opened NVRTC library
     * @param library where it was loaded from, for messages
     */
    public NativeNvrtcApi(SymbolLookup symbols, String library) {
        Downcalls downcalls = new Downcalls(Nvrtc.class, symbols, library);
        nvrtcVersion = downcalls.handle("nvrtcVersion");
        nvrtcCreateProgram = downcalls.handle("nvrtcCreateProgram");
        nvrtcDestroyProgram = downcalls.handle("nvrtcDestroyProgram");
        nvrtcAddNameExpression = downcalls.handle("nvrtcAddNameExpression");
        nvrtcCompileProgram = downcalls.handle("nvrtcCompileProgram");
        nvrtcGetProgramLogSize = downcalls.handle("nvrtcGetProgramLogSize");
        nvrtcGetProgramLog = downcalls.handle("nvrtcGetProgramLog");
        nvrtcGetPTXSize = downcalls.handle("nvrtcGetPTXSize");
        nvrtcGetPTX = downcalls.handle("nvrtcGetPTX");
        nvrtcGetCUBINSize = downcalls.handle("nvrtcGetCUBINSize");
        nvrtcGetCUBIN = downcalls.handle("nvrtcGetCUBIN");
        nvrtcGetLoweredName = downcalls.handle("nvrtcGetLoweredName");
    }

    @Override
    public int nvrtcVersion(MemorySegment major, MemorySegment minor) {
        // Safety: writes one int through each pointer; the caller passes two int-sized segments.
        try {
            return (int) nvrtcVersion.invokeExact(major, minor);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcCreateProgram(MemorySegment prog, MemorySegment src, MemorySegment name, int numHeaders,
            MemorySegment headers, MemorySegment includeNames) {
        // Safety: src and name are NUL-terminated copies made by Arena.allocateFrom; NVRTC copies
        // both before returning. prog is a pointer-sized out slot.
        try {
            return (int) nvrtcCreateProgram.invokeExact(prog, src, name, numHeaders, headers, includeNames);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcDestroyProgram(MemorySegment prog) {
        // Safety: prog points at the handle nvrtcCreateProgram wrote; NvrtcProgram calls this
        // exactly once per created program, after its last other use.
        try {
            return (int) nvrtcDestroyProgram.invokeExact(prog);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcAddNameExpression(MemorySegment prog, MemorySegment name_expression) {
        // Safety: prog is a live program not yet compiled; the expression is a NUL-terminated
        // copy that NVRTC copies in turn.
        try {
            return (int) nvrtcAddNameExpression.invokeExact(prog, name_expression);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcCompileProgram(MemorySegment prog, int numOptions, MemorySegment options) {
        // Safety: options is an array of exactly numOptions pointers, each to a NUL-terminated
        // string in the same arena, all alive until this synchronous call returns.
        try {
            return (int) nvrtcCompileProgram.invokeExact(prog, numOptions, options);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetProgramLogSize(MemorySegment prog, MemorySegment logSizeRet) {
        // Safety: logSizeRet is a size_t-sized out slot; prog is live.
        try {
            return (int) nvrtcGetProgramLogSize.invokeExact(prog, logSizeRet);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetProgramLog(MemorySegment prog, MemorySegment log) {
        // Safety: log has exactly the size nvrtcGetProgramLogSize reported (NUL included), and
        // NVRTC writes no more than that.
        try {
            return (int) nvrtcGetProgramLog.invokeExact(prog, log);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetPTXSize(MemorySegment prog, MemorySegment ptxSizeRet) {
        // Safety: ptxSizeRet is a size_t-sized out slot; prog is live and compiled.
        try {
            return (int) nvrtcGetPTXSize.invokeExact(prog, ptxSizeRet);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetPTX(MemorySegment prog, MemorySegment ptx) {
        // Safety: ptx has exactly the size nvrtcGetPTXSize reported (NUL included).
        try {
            return (int) nvrtcGetPTX.invokeExact(prog, ptx);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetCUBINSize(MemorySegment prog, MemorySegment cubinSizeRet) {
        // Safety: cubinSizeRet is a size_t-sized out slot; prog is live and compiled.
        try {
            return (int) nvrtcGetCUBINSize.invokeExact(prog, cubinSizeRet);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetCUBIN(MemorySegment prog, MemorySegment cubin) {
        // Safety: cubin has exactly the size nvrtcGetCUBINSize reported.
        try {
            return (int) nvrtcGetCUBIN.invokeExact(prog, cubin);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetLoweredName(MemorySegment prog, MemorySegment name_expression, MemorySegment lowered_name) {
        // Safety: the expression was added to this program before it compiled; lowered_name is
        // a pointer-sized out slot, and the string it receives lives until the program is
        // destroyed, which happens only after NvrtcProgram has copied it.
        try {
            return (int) nvrtcGetLoweredName.invokeExact(prog, name_expression, lowered_name);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }
}
