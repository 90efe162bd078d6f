package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.load.Downcalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The NVRTC downcalls behind the {@link NvrtcApi} seam, nothing else. Each function is bound on
 * its first call, in the NVRTC library this instance was made for (its own {@link SymbolLookup},
 * see {@link Downcalls}), and kept: a function newer than the loaded NVRTC ({@link NvrtcFunction}),
 * or missing from it, fails that call, and every later one, with
 * {@link dev.gatun.cuda.nvrtc.NvrtcTooOldException}, and nothing else. Threads that race to a
 * first call each bind it, to the same symbol. NVRTC compiles on cold paths: a handle read from
 * an array is cheap enough.
 *
 * <p>Safety, for every method: each descriptor is the one jextract generated from
 * {@code nvrtc.h}, and the symbol is the function of that name. The per-call comments say why
 * the arguments are sound; {@link NvrtcProgram} allocates them all in one confined arena that
 * outlives the calls.
 */
public final class NativeNvrtcApi implements NvrtcApi {

    private final Downcalls downcalls;
    /** Per {@link NvrtcFunction}, its handle once bound. */
    private final MethodHandle[] handles = new MethodHandle[NvrtcFunction.values().length];
    /** The library's version (CUDA's encoding), read on the first binding that needs it; 0 until then. */
    private int installed;

    /**
     * Binds nothing yet: each function is bound on its first call.
     *
     * @param symbols the opened NVRTC library
     * @param library where it was loaded from, for messages
     */
    public NativeNvrtcApi(SymbolLookup symbols, String library) {
        downcalls = new Downcalls(Nvrtc.class, symbols, library);
    }

    private MethodHandle handle(NvrtcFunction function) {
        MethodHandle h = handles[function.ordinal()];
        if (h == null) {
            int v = function == NvrtcFunction.nvrtcVersion ? 0 : installed();
            if (function != NvrtcFunction.nvrtcVersion && v < function.version()) {
                throw function.missingFrom(downcalls.library(), v);
            }
            MemorySegment address = downcalls.find(function.name())
                    .orElseThrow(() -> function.missingFrom(downcalls.library(), v));
            h = downcalls.link(function.name(), address);
            handles[function.ordinal()] = h;
        }
        return h;
    }

    /** The library's version ({@code nvrtcVersion}), read once; 0 when it cannot tell. */
    private int installed() {
        int v = installed;
        if (v == 0) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
                MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
                if (nvrtcVersion(major, minor) == 0) {
                    v = 1000 * major.get(ValueLayout.JAVA_INT, 0) + 10 * minor.get(ValueLayout.JAVA_INT, 0);
                    installed = v;
                }
            }
        }
        return v;
    }

    @Override
    public int nvrtcVersion(MemorySegment major, MemorySegment minor) {
        // Safety: writes one int through each pointer; the caller passes two int-sized segments.
        try {
            return (int) handle(NvrtcFunction.nvrtcVersion).invokeExact(major, minor);
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
            return (int) handle(NvrtcFunction.nvrtcCreateProgram).invokeExact(prog, src, name, numHeaders, headers,
                    includeNames);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcDestroyProgram(MemorySegment prog) {
        // Safety: prog points at the handle nvrtcCreateProgram wrote; NvrtcProgram calls this
        // exactly once per created program, after its last other use.
        try {
            return (int) handle(NvrtcFunction.nvrtcDestroyProgram).invokeExact(prog);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcAddNameExpression(MemorySegment prog, MemorySegment name_expression) {
        // Safety: prog is a live program not yet compiled; the expression is a NUL-terminated
        // copy that NVRTC copies in turn.
        try {
            return (int) handle(NvrtcFunction.nvrtcAddNameExpression).invokeExact(prog, name_expression);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcCompileProgram(MemorySegment prog, int numOptions, MemorySegment options) {
        // Safety: options is an array of exactly numOptions pointers, each to a NUL-terminated
        // string in the same arena, all alive until this synchronous call returns.
        try {
            return (int) handle(NvrtcFunction.nvrtcCompileProgram).invokeExact(prog, numOptions, options);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetProgramLogSize(MemorySegment prog, MemorySegment logSizeRet) {
        // Safety: logSizeRet is a size_t-sized out slot; prog is live.
        try {
            return (int) handle(NvrtcFunction.nvrtcGetProgramLogSize).invokeExact(prog, logSizeRet);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetProgramLog(MemorySegment prog, MemorySegment log) {
        // Safety: log has exactly the size nvrtcGetProgramLogSize reported (NUL included), and
        // NVRTC writes no more than that.
        try {
            return (int) handle(NvrtcFunction.nvrtcGetProgramLog).invokeExact(prog, log);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetPTXSize(MemorySegment prog, MemorySegment ptxSizeRet) {
        // Safety: ptxSizeRet is a size_t-sized out slot; prog is live and compiled.
        try {
            return (int) handle(NvrtcFunction.nvrtcGetPTXSize).invokeExact(prog, ptxSizeRet);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetPTX(MemorySegment prog, MemorySegment ptx) {
        // Safety: ptx has exactly the size nvrtcGetPTXSize reported (NUL included).
        try {
            return (int) handle(NvrtcFunction.nvrtcGetPTX).invokeExact(prog, ptx);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetCUBINSize(MemorySegment prog, MemorySegment cubinSizeRet) {
        // Safety: cubinSizeRet is a size_t-sized out slot; prog is live and compiled.
        try {
            return (int) handle(NvrtcFunction.nvrtcGetCUBINSize).invokeExact(prog, cubinSizeRet);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int nvrtcGetCUBIN(MemorySegment prog, MemorySegment cubin) {
        // Safety: cubin has exactly the size nvrtcGetCUBINSize reported.
        try {
            return (int) handle(NvrtcFunction.nvrtcGetCUBIN).invokeExact(prog, cubin);
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
            return (int) handle(NvrtcFunction.nvrtcGetLoweredName).invokeExact(prog, name_expression, lowered_name);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }
}
