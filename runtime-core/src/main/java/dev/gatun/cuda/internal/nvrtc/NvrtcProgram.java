package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.GatunException;
import dev.gatun.cuda.nvrtc.CompilationException;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.CompiledProgram;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code nvrtcProgram}, from create to destroy: the checked layer over {@link NvrtcApi}.
 * Every native argument lives in one confined arena that outlives the program, and the program
 * is destroyed exactly once, after everything it owns (image, log, lowered names) was copied
 * into Java memory. A failed destroy is logged, never thrown over the compile's own outcome.
 */
public final class NvrtcProgram {

    private static final Logger LOG = LoggerFactory.getLogger(NvrtcProgram.class);

    /** Lowered names are short mangled identifiers; a bound keeps a bad pointer from reading on. */
    private static final long MAX_LOWERED_NAME_BYTES = 1 << 20;

    private final NvrtcApi api;
    private final CompileRequest request;
    private final Arena arena;
    private final MemorySegment handleSlot;
    private MemorySegment handle;

    private NvrtcProgram(NvrtcApi api, CompileRequest request, Arena arena) {
        this.api = api;
        this.request = request;
        this.arena = arena;
        this.handleSlot = arena.allocate(ValueLayout.ADDRESS);
    }

    /**
     * Compiles {@code request} with NVRTC.
     *
     * @throws CompilationException when nvrtcCompileProgram fails, with the full log
     * @throws CudaException when another NVRTC call fails
     */
    public static CompiledProgram compile(NvrtcApi api, CompileRequest request) {
        try (Arena arena = Arena.ofConfined()) {
            return new NvrtcProgram(api, request, arena).run();
        }
    }

    private CompiledProgram run() {
        String name = request.options().programName();
        check(api.nvrtcCreateProgram(handleSlot, arena.allocateFrom(request.source()), arena.allocateFrom(name), 0,
                MemorySegment.NULL, MemorySegment.NULL), "nvrtcCreateProgram");
        handle = handleSlot.get(ValueLayout.ADDRESS, 0);
        try {
            List<String> expressions = request.options().nameExpressions();
            MemorySegment[] expressionStrings = new MemorySegment[expressions.size()];
            for (int i = 0; i < expressionStrings.length; i++) {
                expressionStrings[i] = arena.allocateFrom(expressions.get(i));
                check(api.nvrtcAddNameExpression(handle, expressionStrings[i]),
                        "nvrtcAddNameExpression(" + expressions.get(i) + ")");
            }
            List<String> arguments = request.arguments();
            MemorySegment argv = arena.allocate(ValueLayout.ADDRESS, arguments.size());
            for (int i = 0; i < arguments.size(); i++) {
                argv.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(arguments.get(i)));
            }
            int compiled = api.nvrtcCompileProgram(handle, arguments.size(), argv);
            if (compiled != 0) {
                throw new CompilationException(compiled, NvrtcResults.name(compiled), name, arguments,
                        logAfterFailure(compiled));
            }
            String log = log();
            byte[] image = request.options().target().kind() == CompileTarget.Kind.PTX ? ptx() : cubin();
            Map<String, String> lowered = new LinkedHashMap<>();
            for (int i = 0; i < expressionStrings.length; i++) {
                lowered.put(expressions.get(i), loweredName(expressions.get(i), expressionStrings[i]));
            }
            return new CompiledProgram(name, request.options().target(), image, log, lowered, request.nvrtcVersion());
        } finally {
            destroy();
        }
    }

    private String log() {
        long size = size(api::nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
        if (size <= 1) {
            return "";
        }
        MemorySegment text = arena.allocate(size);
        check(api.nvrtcGetProgramLog(handle, text), "nvrtcGetProgramLog");
        return text.getString(0);
    }

    /** The log of a failed compile; failing to read it must not hide why the compile failed. */
    private String logAfterFailure(int compiled) {
        try {
            return log();
        } catch (CudaException e) {
            return "(the compiler log could not be read: " + e.getMessage() + "; the compile failed with "
                    + NvrtcResults.name(compiled) + ")";
        }
    }

    private byte[] ptx() {
        long size = size(api::nvrtcGetPTXSize, "nvrtcGetPTXSize");
        MemorySegment ptx = arena.allocate(Math.max(size, 1));
        check(api.nvrtcGetPTX(handle, ptx), "nvrtcGetPTX");
        // The reported size counts the terminating NUL; the Java image is the text alone.
        long text = size > 0 && ptx.get(ValueLayout.JAVA_BYTE, size - 1) == 0 ? size - 1 : size;
        return ptx.asSlice(0, text).toArray(ValueLayout.JAVA_BYTE);
    }

    private byte[] cubin() {
        long size = size(api::nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
        MemorySegment cubin = arena.allocate(Math.max(size, 1));
        check(api.nvrtcGetCUBIN(handle, cubin), "nvrtcGetCUBIN");
        return cubin.asSlice(0, size).toArray(ValueLayout.JAVA_BYTE);
    }

    private String loweredName(String expression, MemorySegment expressionString) {
        MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
        check(api.nvrtcGetLoweredName(handle, expressionString, out), "nvrtcGetLoweredName(" + expression + ")");
        MemorySegment lowered = out.get(ValueLayout.ADDRESS, 0);
        if (lowered.equals(MemorySegment.NULL)) {
            throw new GatunException("nvrtcGetLoweredName(" + expression + ") for "
                    + request.options().programName() + " succeeded but returned no name");
        }
        // Safety: NVRTC points at a NUL-terminated string owned by the program, which is
        // destroyed only in run()'s finally block, after this copy.
        return lowered.reinterpret(MAX_LOWERED_NAME_BYTES).getString(0);
    }

    /** One of NVRTC's {@code nvrtcGet*Size(prog, size_t *)} queries. */
    private interface SizeQuery {
        int query(MemorySegment prog, MemorySegment sizeRet);
    }

    private long size(SizeQuery query, String operation) {
        MemorySegment size = arena.allocate(ValueLayout.JAVA_LONG);
        check(query.query(handle, size), operation);
        return size.get(ValueLayout.JAVA_LONG, 0);
    }

    private void destroy() {
        int destroyed = api.nvrtcDestroyProgram(handleSlot);
        if (destroyed != 0) {
            LOG.warn("nvrtcDestroyProgram for {} failed with {} ({}); NVRTC keeps that program's memory",
                    request.options().programName(), NvrtcResults.name(destroyed), destroyed);
        }
    }

    private void check(int result, String operation) {
        if (result != 0) {
            throw new CudaException(result, NvrtcResults.name(result), "",
                    operation + " for " + request.options().programName(), -1);
        }
    }
}
