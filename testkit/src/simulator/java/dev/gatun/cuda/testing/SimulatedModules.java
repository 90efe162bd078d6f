package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUlaunchAttributeValue_union;
import dev.gatun.cuda.bindings.driver.CUlaunchAttribute_st;
import dev.gatun.cuda.bindings.driver.CUlaunchConfig_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The simulated driver's modules, functions, launches and occupancy. A module is loaded from PTX
 * text (or a {@link CubinBuilder} image holding such text); its functions are the PTX
 * {@code .entry} declarations, with parameter sizes from their {@code .param} lines. A launch
 * queues what the test set as the kernel's {@linkplain FakeKernel body}.
 */
final class SimulatedModules {

    /** A function parsed from a PTX .entry: its name and parameter sizes. */
    static final class Function {
        final String name;
        final long module;
        final List<Integer> paramSizes;
        int maxDynamicShared;

        Function(String name, long module, List<Integer> paramSizes) {
            this.name = name;
            this.module = module;
            this.paramSizes = paramSizes;
        }
    }

    /** A kernel launch as a graph node describes it: function, dimensions and argument values. */
    record KernelNode(long function, int gx, int gy, int gz, int bx, int by, int bz, int smem, long[] raw) {
    }

    private static final Pattern ENTRY = Pattern.compile("\\.entry\\s+(\\w+)\\s*\\(([^)]*)\\)", Pattern.DOTALL);
    private static final Pattern PARAM = Pattern.compile(
            "\\.param\\s+\\.(?:align\\s+\\d+\\s+)?\\.?([usfb])(\\d+)\\s+\\w+(?:\\[(\\d+)\\])?");

    private final FakeDriverApi gpu;
    /** Each live module's functions by name. */
    final Map<Long, Map<String, Function>> modules = new HashMap<>();
    /** Function handles handed out by cuModuleGetFunction. */
    final Map<Long, Function> functions = new HashMap<>();
    // Configuration, set through FakeDriverApi's controls.
    final Map<String, FakeKernel> bodies = new HashMap<>();
    final Map<String, Integer> staticShared = new HashMap<>();
    final Map<String, Integer> registers = new HashMap<>();
    boolean rejectPtx;
    boolean anyFunction;

    final List<String> functionLookups = new ArrayList<>();
    int launches;
    /** The attributes of each cuLaunchKernelEx the driver accepted, in order. */
    final List<List<FakeDriverApi.LaunchAttribute>> extendedLaunches = new ArrayList<>();

    SimulatedModules(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuModuleLoadData(MemorySegment out, MemorySegment image) {
        return load(out, image, "cuModuleLoadData");
    }

    /** Whether {@code image} is a simulated CUBIN (CubinBuilder), which holds PTX-like text after its ELF header. */
    private static boolean cubin(MemorySegment image) {
        MemorySegment head = image.reinterpret(4);
        return head.get(ValueLayout.JAVA_BYTE, 0) == 0x7f && head.get(ValueLayout.JAVA_BYTE, 1) == 'E'
                && head.get(ValueLayout.JAVA_BYTE, 2) == 'L' && head.get(ValueLayout.JAVA_BYTE, 3) == 'F';
    }

    /** The text the simulation reads from {@code image}: the PTX, or a simulated CUBIN's code section. */
    private static String text(MemorySegment image) {
        return image.reinterpret(1 << 24).getString(cubin(image) ? CubinBuilder.TEXT_OFFSET : 0);
    }

    /** Whether {@code image} is an image at all (what even a lazy load tells): it has a .version. */
    static boolean isImage(MemorySegment image) {
        return text(image).contains(".version");
    }

    /**
     * A copy of the bytes of {@code image} the simulation reads (through its text's NUL), which
     * lives as long as the segment: what the driver keeps of a library's image until a context
     * loads it.
     */
    static MemorySegment copyOf(MemorySegment image) {
        MemorySegment all = image.reinterpret(1 << 24);
        long end = cubin(image) ? CubinBuilder.TEXT_OFFSET : 0;
        while (all.get(ValueLayout.JAVA_BYTE, end) != 0) {
            end++;
        }
        MemorySegment copy = Arena.ofAuto().allocate(end + 1);
        MemorySegment.copy(all, 0, copy, 0, end + 1);
        return copy;
    }

    /**
     * Loads {@code image} as a module, as the driver's JIT does for PTX: an image without
     * {@code .version} is none, PTX of a newer ISA is refused, and PTX with a line that is no PTX
     * statement is {@code CUDA_ERROR_INVALID_PTX} with ptxas's syntax error in the log (for
     * {@code function}, the call that made the load).
     */
    int load(MemorySegment out, MemorySegment image, String function) {
        boolean cubin = cubin(image);
        String text = text(image);
        if (!text.contains(".version")) {
            return CudaDriver.CUDA_ERROR_INVALID_IMAGE();
        }
        if (!cubin && (rejectPtx || text.contains(".version 99."))) {
            gpu.logs.refused(function, "the PTX ISA version of image is newer than this driver supports");
            return CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION();
        }
        String syntax = cubin ? null : syntaxError(text);
        if (syntax != null) {
            gpu.logs.refused(function, "ptxas application ptx input, " + syntax);
            return CudaDriver.CUDA_ERROR_INVALID_PTX();
        }
        long h = gpu.newHandle();
        Map<String, Function> fs = new HashMap<>();
        Matcher m = ENTRY.matcher(text);
        while (m.find()) {
            List<Integer> sizes = new ArrayList<>();
            Matcher p = PARAM.matcher(m.group(2));
            while (p.find()) {
                int bits = Integer.parseInt(p.group(2));
                int count = p.group(3) == null ? 1 : Integer.parseInt(p.group(3));
                sizes.add(bits / 8 * count);
            }
            fs.put(m.group(1), new Function(m.group(1), h, List.copyOf(sizes)));
        }
        modules.put(h, fs);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    /**
     * ptxas's complaint about the first line of {@code ptx} that is no PTX statement, or null: a
     * line (its comment dropped) must be blank, start a directive or a brace, or end a statement,
     * a label or a list ({@code ; : , { (}). Bytes that are not PTX fail, as they do in ptxas.
     */
    static String syntaxError(String ptx) {
        String[] lines = ptx.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            int comment = line.indexOf("//");
            line = (comment < 0 ? line : line.substring(0, comment)).strip();
            if (line.isEmpty() || ".{}()".indexOf(line.charAt(0)) >= 0 || ";:,{(".indexOf(line.charAt(line.length() - 1)) >= 0) {
                continue;
            }
            return "line " + (i + 1) + "; error   : syntax error at '" + line + "'";
        }
        return null;
    }

    public int cuModuleUnload(MemorySegment module) {
        Map<String, Function> fs = modules.remove(module.address());
        if (fs == null) {
            return INVALID_HANDLE;
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            for (StreamOp op : s.queue) {
                if (op.module == module.address()) {
                    gpu.violations.add("cuModuleUnload while a queued launch uses the module");
                }
            }
        }
        for (List<StreamOp> ops : gpu.graphs.execs.values()) {
            for (StreamOp op : ops) {
                if (op.module == module.address()) {
                    gpu.violations.add("cuModuleUnload of a module a live graph executable launches");
                }
            }
        }
        functions.values().removeIf(f -> f.module == module.address());
        return SUCCESS;
    }

    public int cuModuleGetFunction(MemorySegment out, MemorySegment module, MemorySegment name) {
        Map<String, Function> fs = modules.get(module.address());
        if (fs == null) {
            return INVALID_HANDLE;
        }
        String wanted = name.reinterpret(4096).getString(0);
        functionLookups.add(wanted);
        Function f = fs.get(wanted);
        if (f == null && anyFunction) {
            f = new Function(wanted, module.address(), List.of());
            fs.put(wanted, f);
        }
        if (f == null) {
            return CudaDriver.CUDA_ERROR_NOT_FOUND();
        }
        long h = gpu.newHandle();
        functions.put(h, f);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    // ---- function attributes ----

    public int cuFuncGetAttribute(MemorySegment pi, int attrib, MemorySegment func) {
        Function f = functions.get(func.address());
        if (f == null) {
            return INVALID_HANDLE;
        }
        int v;
        int regs = registers.getOrDefault(f.name, 32);
        if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_NUM_REGS()) {
            v = regs;
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES()) {
            v = staticShared.getOrDefault(f.name, 0);
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK()) {
            v = Math.min(1024, 65_536 / regs / 32 * 32);
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES()) {
            v = f.maxDynamicShared;
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_PTX_VERSION() || attrib == CudaDriver.CU_FUNC_ATTRIBUTE_BINARY_VERSION()) {
            v = 90;
        } else {
            v = 0;
        }
        pi.set(ValueLayout.JAVA_INT, 0, v);
        return SUCCESS;
    }

    public int cuFuncSetAttribute(MemorySegment func, int attrib, int value) {
        Function f = functions.get(func.address());
        if (f == null) {
            return INVALID_HANDLE;
        }
        if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES()) {
            int most = SimulatedDevices.defaultAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN())
                    - staticShared.getOrDefault(f.name, 0);
            if (value > most) {
                gpu.logs.refused("cuFuncSetAttribute", "value " + value + " for attrib "
                        + "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is more than the " + most
                        + " bytes of dynamic shared memory a block of this function can opt in to");
                return INVALID_VALUE;
            }
            f.maxDynamicShared = value;
        }
        return SUCCESS;
    }

    public int cuFuncGetParamInfo(MemorySegment func, long index, MemorySegment offset, MemorySegment size) {
        Function f = functions.get(func.address());
        if (f == null) {
            return INVALID_HANDLE;
        }
        if (index < 0 || index >= f.paramSizes.size()) {
            // As the real driver logs the probe past the last parameter (seen on the H200).
            gpu.logs.refused("cuFuncGetParamInfo", "paramIndex " + index + " outside of kernel parameter count "
                    + f.paramSizes.size());
            return INVALID_VALUE;
        }
        long at = 0;
        for (int i = 0; i <= index; i++) {
            int sz = f.paramSizes.get(i);
            int align = Math.min(8, Integer.highestOneBit(Math.max(1, sz)));
            at = (at + align - 1) / align * align;
            if (i < index) {
                at += sz;
            }
        }
        offset.set(ValueLayout.JAVA_LONG, 0, at);
        size.set(ValueLayout.JAVA_LONG, 0, f.paramSizes.get((int) index));
        return SUCCESS;
    }

    // ---- launches ----

    public int cuLaunchKernel(MemorySegment f, int gx, int gy, int gz, int bx, int by, int bz, int smem,
            MemorySegment stream, MemorySegment params, MemorySegment extra) {
        return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, smem, stream, params, false);
    }

    public int cuLaunchCooperativeKernel(MemorySegment f, int gx, int gy, int gz, int bx, int by, int bz, int smem,
            MemorySegment stream, MemorySegment params) {
        return launch("cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, smem, stream, params, true);
    }

    public int cuLaunchKernelEx(MemorySegment config, MemorySegment f, MemorySegment params, MemorySegment extra) {
        MemorySegment c = config.reinterpret(CUlaunchConfig_st.sizeof());
        List<FakeDriverApi.LaunchAttribute> attributes = attributes(c);
        List<SimulatedStreams.Event> events = new ArrayList<>();
        for (FakeDriverApi.LaunchAttribute a : attributes) {
            // The simulated device's stream priority range is 0 (lowest) .. -5 (highest).
            if (a.id() == CudaDriver.CU_LAUNCH_ATTRIBUTE_PRIORITY() && (a.values().get(0) < -5 || a.values().get(0) > 0)) {
                gpu.logs.refused("cuLaunchKernelEx", "launch attribute CU_LAUNCH_ATTRIBUTE_PRIORITY value "
                        + a.values().get(0) + " is outside the priority range [-5, 0]");
                return INVALID_VALUE;
            }
            if (a.event() != 0) {
                SimulatedStreams.Event e = gpu.streams.events.get(a.event());
                if (e == null) {
                    return INVALID_HANDLE;
                }
                if (e.timing || a.values().get(0) != 0) { // as the driver: timing disabled, record flags 0
                    return INVALID_VALUE;
                }
                events.add(e);
            }
        }
        int r = launch("cuLaunchKernelEx", f, CUlaunchConfig_st.gridDimX(c), CUlaunchConfig_st.gridDimY(c), CUlaunchConfig_st.gridDimZ(c),
                CUlaunchConfig_st.blockDimX(c), CUlaunchConfig_st.blockDimY(c), CUlaunchConfig_st.blockDimZ(c),
                CUlaunchConfig_st.sharedMemBytes(c), CUlaunchConfig_st.hStream(c), params, false);
        if (r == SUCCESS) {
            extendedLaunches.add(attributes);
            // Each event fires once the kernel's blocks have triggered (or begun): here, once it ran.
            SimulatedStreams.Stream s = gpu.streams.stream(CUlaunchConfig_st.hStream(c).address());
            for (SimulatedStreams.Event e : events) {
                gpu.streams.record(s, e);
            }
        }
        return r;
    }

    /**
     * The attribute array of a {@code CUlaunchConfig}: each entry's id and value, the three
     * cluster dimensions for a cluster, an event attribute's flags (and triggerAtBlockStart) with
     * its event, otherwise the union's leading int (every other attribute Gatun sets is one int).
     */
    static List<FakeDriverApi.LaunchAttribute> attributes(MemorySegment config) {
        int count = CUlaunchConfig_st.numAttrs(config);
        MemorySegment array = CUlaunchConfig_st.attrs(config).reinterpret(count * CUlaunchAttribute_st.sizeof());
        List<FakeDriverApi.LaunchAttribute> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            MemorySegment one = CUlaunchAttribute_st.asSlice(array, i);
            int id = CUlaunchAttribute_st.id(one);
            MemorySegment value = CUlaunchAttribute_st.value(one);
            if (id == CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION()) {
                MemorySegment d = CUlaunchAttributeValue_union.clusterDim(value);
                out.add(new FakeDriverApi.LaunchAttribute(id, List.of(CUlaunchAttributeValue_union.clusterDim.x(d),
                        CUlaunchAttributeValue_union.clusterDim.y(d), CUlaunchAttributeValue_union.clusterDim.z(d))));
            } else if (id == CudaDriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT()) {
                MemorySegment e = CUlaunchAttributeValue_union.programmaticEvent(value);
                out.add(new FakeDriverApi.LaunchAttribute(id, List.of(CUlaunchAttributeValue_union.programmaticEvent.flags(e),
                        CUlaunchAttributeValue_union.programmaticEvent.triggerAtBlockStart(e)),
                        CUlaunchAttributeValue_union.programmaticEvent.event(e).address()));
            } else if (id == CudaDriver.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT()) {
                MemorySegment e = CUlaunchAttributeValue_union.launchCompletionEvent(value);
                out.add(new FakeDriverApi.LaunchAttribute(id,
                        List.of(CUlaunchAttributeValue_union.launchCompletionEvent.flags(e)),
                        CUlaunchAttributeValue_union.launchCompletionEvent.event(e).address()));
            } else {
                out.add(new FakeDriverApi.LaunchAttribute(id, List.of(value.get(ValueLayout.JAVA_INT, 0))));
            }
        }
        return List.copyOf(out);
    }

    private int launch(String function, MemorySegment fn, int gx, int gy, int gz, int bx, int by, int bz, int smem,
            MemorySegment stream, MemorySegment params, boolean cooperative) {
        Function f = functions.get(fn.address());
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (f == null || s == null) {
            return INVALID_HANDLE;
        }
        if ((long) bx * by * bz > 1024) {
            gpu.logs.refused(function, "blockDim (" + bx + ", " + by + ", " + bz + ") is more than 1024 threads per block");
            return INVALID_VALUE;
        }
        int sharedMost = Math.max(48 * 1024 - staticShared.getOrDefault(f.name, 0), f.maxDynamicShared);
        if (smem > sharedMost) {
            gpu.logs.refused(function, "sharedMemBytes " + smem + " is more than the " + sharedMost + " bytes of "
                    + "dynamic shared memory this function may use (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)");
            return INVALID_VALUE;
        }
        if (cooperative && (long) gx * gy * gz > 132L * Math.max(1, 2048 / (bx * by * bz))) {
            return CudaDriver.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE();
        }
        launches++;
        gpu.streams.submit(s, kernelOp(new KernelNode(fn.address(), gx, gy, gz, bx, by, bz, smem, readArguments(f, params))));
        return SUCCESS;
    }

    /** The argument values a {@code void**} kernelParams array points at, widened to longs. */
    long[] readArguments(Function f, MemorySegment params) {
        MemorySegment ptrs = params.reinterpret(8L * f.paramSizes.size());
        long[] raw = new long[f.paramSizes.size()];
        for (int i = 0; i < raw.length; i++) {
            MemorySegment slot = ptrs.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(8);
            int size = f.paramSizes.get(i);
            raw[i] = size == 8 ? slot.get(ValueLayout.JAVA_LONG, 0) : size == 4 ? slot.get(ValueLayout.JAVA_INT, 0)
                    : size == 2 ? slot.get(ValueLayout.JAVA_SHORT, 0) : slot.get(ValueLayout.JAVA_BYTE, 0);
        }
        return raw;
    }

    /** The operation that runs a kernel as {@code node} describes it. */
    StreamOp kernelOp(KernelNode node) {
        Function f = functions.get(node.function());
        Set<Long> uses = new HashSet<>();
        for (int i = 0; i < node.raw().length; i++) {
            if (f.paramSizes.get(i) == 8 && gpu.memory.resolve(node.raw()[i], 0) != null) {
                uses.addAll(gpu.memory.uses(node.raw()[i], 1)); // a mapped range: the mapping the pointer is in
            }
        }
        FakeKernel body = bodies.get(f.name);
        StreamOp op = new StreamOp(() -> {
            if (body != null) {
                body.run(new SimulatedLaunch(gpu.memory, gpu.conditionals, node));
            }
        }, uses, Set.of());
        op.module = f.module;
        op.kernel = node;
        return op;
    }

    // ---- occupancy ----

    public int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(MemorySegment numBlocks, MemorySegment func,
            int blockSize, long dynamicSmem, int flags) {
        numBlocks.set(ValueLayout.JAVA_INT, 0, Math.max(1, 2048 / Math.max(1, blockSize)));
        return SUCCESS;
    }

    public int cuOccupancyMaxPotentialBlockSizeWithFlags(MemorySegment minGridSize, MemorySegment blockSize,
            MemorySegment func, MemorySegment callback, long dynamicSmem, int blockSizeLimit, int flags) {
        int block = blockSizeLimit > 0 ? Math.min(1024, blockSizeLimit) : 1024;
        minGridSize.set(ValueLayout.JAVA_INT, 0, 132 * (2048 / block));
        blockSize.set(ValueLayout.JAVA_INT, 0, block);
        return SUCCESS;
    }

    public int cuOccupancyMaxActiveClusters(MemorySegment numClusters, MemorySegment func, MemorySegment config) {
        int size = 1;
        for (FakeDriverApi.LaunchAttribute a : attributes(config.reinterpret(CUlaunchConfig_st.sizeof()))) {
            if (a.id() == CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION()) {
                size = a.values().get(0) * a.values().get(1) * a.values().get(2);
            }
        }
        numClusters.set(ValueLayout.JAVA_INT, 0, 132 / size);
        return SUCCESS;
    }

}
