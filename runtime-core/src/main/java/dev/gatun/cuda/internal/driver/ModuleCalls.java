package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Layer 2, modules and functions: load and unload, function lookup, attributes, parameter
 * layout and occupancy. Each call names its operation once, owns its out-parameters and checks
 * its result. All are cold paths; inputs the driver reads from native memory (the image, a
 * function name) are copied into a confined arena for the call.
 */
public final class ModuleCalls {

    private static final String LOAD = "cuModuleLoadData";
    private static final String UNLOAD = "cuModuleUnload";
    private static final String GET_FUNCTION = "cuModuleGetFunction";
    private static final String GET_ATTRIBUTE = "cuFuncGetAttribute";
    private static final String SET_ATTRIBUTE = "cuFuncSetAttribute";
    private static final String PARAM_INFO = "cuFuncGetParamInfo";
    private static final String MAX_ACTIVE_BLOCKS = "cuOccupancyMaxActiveBlocksPerMultiprocessor";
    private static final String MAX_BLOCK_SIZE = "cuOccupancyMaxPotentialBlockSize";
    private static final String MAX_ACTIVE_CLUSTERS = "cuOccupancyMaxActiveClusters";
    private static final int NOT_FOUND = CudaDriver.CUDA_ERROR_NOT_FOUND();
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private final Checked c;

    ModuleCalls(Checked c) {
        this.c = c;
    }

    /**
     * Loads a module image into this context; may synchronize: call it inside the gate.
     *
     * @param image the whole image as the driver takes it (PTX NUL-terminated), structurally
     *     checked already ({@code ModuleImage}): never bytes the driver could read past
     * @param artifact where the image came from, for the error message
     */
    public MemorySegment load(byte[] image, String artifact) {
        c.current(LOAD);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_BYTE, image);
            MemorySegment out = c.out();
            // Safety: data holds the whole image for the call, which copies it; the driver takes no
            // length, so every offset and size it follows must lie within these bytes, which the
            // only caller passes from a ModuleImage, checked when it was made (internal.image:
            // ELF tables, fatbin entries, PTX text). out receives the CUmodule.
            int r = c.api.cuModuleLoadData(out, data);
            if (r != 0) {
                throw c.fail(r, LOAD + "(" + artifact + ")");
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * Unloads a module; the raw result, for retirement (sticky results still poison). Makes the
     * context current first, as it acts on the current one.
     *
     * @param module a module whose kernels no queued or future launch uses
     */
    public int unload(MemorySegment module) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: no launch of its kernels is pending or can happen; its
        // context is current on this carrier, made so just now.
        return c.observe(c.api.cuModuleUnload(module), UNLOAD);
    }

    /** The function {@code name} of a loaded module, or null when the module has no such function. */
    public MemorySegment function(MemorySegment module, String name) {
        c.current(GET_FUNCTION);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = c.out();
            // Safety: the caller holds a reference on the loaded module; the name is a
            // NUL-terminated copy alive for the call; out receives the CUfunction.
            DriverLog.asking(); // the caller says which function is missing, and where it looked
            int r = -1;
            try {
                r = c.api.cuModuleGetFunction(out, module, arena.allocateFrom(name));
            } finally {
                DriverLog.answered(r, r == NOT_FOUND);
            }
            if (r == NOT_FOUND) {
                return null;
            }
            if (r != 0) {
                throw c.fail(r, GET_FUNCTION + "(" + name + ")");
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /** One attribute ({@code CU_FUNC_ATTRIBUTE_*}) of a function whose module the caller holds. */
    public int attribute(MemorySegment function, int attribute) {
        c.current(GET_ATTRIBUTE);
        MemorySegment out = c.out();
        // Safety: out holds the int the driver writes; the function's module is retained.
        int r = c.api.cuFuncGetAttribute(out, attribute, function);
        if (r != 0) {
            throw c.fail(r, GET_ATTRIBUTE + "(" + attribute + ")");
        }
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /** Sets an attribute of a function whose module the caller holds; the driver validates both numbers. */
    public void setAttribute(MemorySegment function, int attribute, int value) {
        c.current(SET_ATTRIBUTE);
        // Safety: the function's module is retained.
        int r = c.api.cuFuncSetAttribute(function, attribute, value);
        if (r != 0) {
            throw c.fail(r, SET_ATTRIBUTE + "(" + attribute + ", " + value + ")");
        }
    }

    /** One parameter's place in a function's argument buffer. */
    public record Parameter(long offset, long size) {
    }

    /**
     * Every parameter's place in the function's argument buffer, in order. Needs
     * {@code cuFuncGetParamInfo} (CUDA 12.4): the caller checks that first.
     */
    public List<Parameter> parameters(MemorySegment function) {
        List<Parameter> params = new ArrayList<>();
        for (long i = 0;; i++) {
            // Made current before each call: the lines the one before logged went to SLF4J, whose
            // appenders may take a lock, and so park this thread and move it to another carrier.
            c.current(PARAM_INFO);
            MemorySegment out = c.out();
            // Safety: out holds the two size_t results; the function's module is retained.
            DriverLog.asking(); // the probe past the last parameter is refused, and logged: an answer
            int r = -1;
            try {
                r = c.api.cuFuncGetParamInfo(function, i, out, out.asSlice(8));
            } finally {
                DriverLog.answered(r, r == INVALID_VALUE);
            }
            if (r == INVALID_VALUE) {
                return List.copyOf(params); // past the last parameter
            }
            if (r != 0) {
                throw c.fail(r, PARAM_INFO + "(" + i + ")");
            }
            params.add(new Parameter(out.get(ValueLayout.JAVA_LONG, 0), out.get(ValueLayout.JAVA_LONG, 8)));
        }
    }

    /** How many blocks of {@code blockThreads} threads can be resident on one multiprocessor. */
    public int maxActiveBlocksPerMultiprocessor(MemorySegment function, int blockThreads, long dynamicSharedBytes) {
        c.current(MAX_ACTIVE_BLOCKS);
        MemorySegment out = c.out();
        // Safety: out holds the int result; the function's module is retained.
        c.check(c.api.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(out, function, blockThreads,
                dynamicSharedBytes, 0), MAX_ACTIVE_BLOCKS);
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /** A block size that maximizes occupancy, and the smallest grid that reaches it. */
    public record BlockSize(int minGridSize, int blockSize) {
    }

    /** A block size that maximizes occupancy, and the smallest grid that reaches it. */
    public BlockSize suggestBlockSize(MemorySegment function, long dynamicSharedBytes,
            int blockSizeLimit) {
        c.current(MAX_BLOCK_SIZE);
        MemorySegment out = c.out();
        // Safety: out holds the two int results; a NULL callback means the shared memory does
        // not depend on the block size; the function's module is retained.
        c.check(c.api.cuOccupancyMaxPotentialBlockSizeWithFlags(out, out.asSlice(4), function, MemorySegment.NULL,
                dynamicSharedBytes, blockSizeLimit, 0), MAX_BLOCK_SIZE);
        return new BlockSize(out.get(ValueLayout.JAVA_INT, 0), out.get(ValueLayout.JAVA_INT, 4));
    }

    /**
     * How many clusters of a launch configuration's shape can be co-resident.
     *
     * @param config a complete {@code CUlaunchConfig} with its attribute array, alive for the call
     */
    public int maxActiveClusters(MemorySegment function, MemorySegment config) {
        c.current(MAX_ACTIVE_CLUSTERS);
        MemorySegment out = c.out();
        // Safety: out holds the int result; config is complete per the caller's contract; the
        // function's module is retained.
        c.check(c.api.cuOccupancyMaxActiveClusters(out, function, config), MAX_ACTIVE_CLUSTERS);
        return out.get(ValueLayout.JAVA_INT, 0);
    }
}
