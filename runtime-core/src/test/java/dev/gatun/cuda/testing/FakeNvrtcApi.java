package dev.gatun.cuda.testing;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.nvrtc.NvrtcApi;
import dev.gatun.cuda.internal.nvrtc.NvrtcFunction;
import dev.gatun.cuda.internal.nvrtc.Sha256;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A simulated NVRTC behind {@link NvrtcApi}, for CPU tests. It follows NVRTC's contracts where
 * Gatun depends on them: sizes count the PTX's and the log's terminating NUL, a virtual
 * architecture has no CUBIN, lowered names exist only for expressions added before compiling,
 * and destroy clears the caller's handle. It "compiles" deterministically: the image encodes
 * the source, the options and the architecture; a source line containing {@code #error} fails
 * with a log that quotes the line; an option starting with {@code --bogus} is refused.
 *
 * <p>It counts calls and live programs, and can make a named call return a chosen result.
 */
public final class FakeNvrtcApi implements NvrtcApi {

    private final int major;
    private final int minor;
    private final Arena strings = Arena.ofAuto();
    private final Map<Long, Program> programs = new HashMap<>();
    private final Map<String, Integer> failures = new HashMap<>();
    private final Set<String> missing = new HashSet<>();
    private long nextHandle = 0x1000;
    private int creates;
    private int compiles;
    private int destroys;
    private int calls;
    private List<String> lastOptions = List.of();
    private String warningLog = "";

    private static final class Program {
        final String source;
        final String name;
        final List<String> expressions = new ArrayList<>();
        final Map<String, MemorySegment> lowered = new LinkedHashMap<>();
        boolean compiled;
        String log = "";
        String architecture;
        List<String> options;
        byte[] ptx;

        Program(String source, String name) {
            this.source = source;
            this.name = name;
        }
    }

    public FakeNvrtcApi(int major, int minor) {
        this.major = major;
        this.minor = minor;
    }

    public FakeNvrtcApi() {
        this(13, 0);
    }

    /** This NVRTC lacks {@code function} (one of NvrtcApi's): a call of it throws NvrtcTooOldException. */
    public synchronized FakeNvrtcApi without(String function) {
        missing.add(function);
        return this;
    }

    /** Makes every later call of {@code function} return {@code result} without doing anything. */
    public synchronized FakeNvrtcApi failing(String function, int result) {
        failures.put(function, result);
        return this;
    }

    /** The log a successful compile writes from now on. */
    public synchronized FakeNvrtcApi warningLog(String log) {
        this.warningLog = log;
        return this;
    }

    public synchronized int creates() {
        return creates;
    }

    public synchronized int compiles() {
        return compiles;
    }

    public synchronized int destroys() {
        return destroys;
    }

    public synchronized int livePrograms() {
        return programs.size();
    }

    /** Every call this fake received, of any function, failed or not. */
    public synchronized int calls() {
        return calls;
    }

    /** The options of the last compile, as NVRTC read them from native memory. */
    public synchronized List<String> lastOptions() {
        return lastOptions;
    }

    /** The PTX this fake produces for a source compiled with these options (no trailing NUL). */
    public static String ptxFor(String source, List<String> options) {
        String arch = architectureOf(options);
        return "// fake PTX for " + arch + "\n// options " + options + "\n// source sha256 "
                + Sha256.hex(source.getBytes(StandardCharsets.UTF_8)) + "\n.version 9.0\n.target " + arch + "\n";
    }

    /** The CUBIN this fake produces: a well-formed ELF whose code section holds {@link #ptxFor}'s text. */
    public static byte[] cubinFor(String source, List<String> options) {
        return CubinBuilder.cubin("fake", ptxFor(source, options));
    }

    /** The fake's mangling of a name expression. */
    public static String loweredFor(String expression) {
        return "_Z" + expression.length() + expression.replaceAll("[^A-Za-z0-9]", "_");
    }

    /** The log a failing compile writes: one line per {@code #error} line, then a summary. */
    public static String errorLogFor(String name, String source) {
        StringBuilder log = new StringBuilder();
        String[] lines = source.split("\n", -1);
        int errors = 0;
        for (int i = 0; i < lines.length; i++) {
            if (lines[i].contains("#error")) {
                errors++;
                log.append(name).append('(').append(i + 1).append("): error: ").append(lines[i].strip()).append('\n');
            }
        }
        return log.append(errors).append(" errors detected in the compilation of \"").append(name).append("\".\n")
                .toString();
    }

    private static String architectureOf(List<String> options) {
        for (String option : options) {
            if (option.startsWith("--gpu-architecture=")) {
                return option.substring("--gpu-architecture=".length());
            }
        }
        return "compute_52";
    }

    private Integer injected(String function) {
        NvrtcFunction f = NvrtcFunction.valueOf(function);
        int installed = 1000 * major + 10 * minor;
        if (missing.contains(function) || installed < f.version()) {
            throw f.missingFrom("the simulated NVRTC", installed); // as NativeNvrtcApi's call of a missing function
        }
        calls++;
        return failures.get(function);
    }

    private Program program(MemorySegment prog) {
        return programs.get(prog.address());
    }

    @Override
    public synchronized int nvrtcVersion(MemorySegment major, MemorySegment minor) {
        Integer f = injected("nvrtcVersion");
        if (f != null) {
            return f;
        }
        major.set(ValueLayout.JAVA_INT, 0, this.major);
        minor.set(ValueLayout.JAVA_INT, 0, this.minor);
        return 0;
    }

    @Override
    public synchronized int nvrtcCreateProgram(MemorySegment prog, MemorySegment src, MemorySegment name,
            int numHeaders, MemorySegment headers, MemorySegment includeNames) {
        Integer f = injected("nvrtcCreateProgram");
        if (f != null) {
            return f;
        }
        creates++;
        long handle = nextHandle++;
        // getString on the caller's segment as given: a segment too short for its NUL fails here.
        programs.put(handle, new Program(src.getString(0), name.getString(0)));
        prog.set(ValueLayout.ADDRESS, 0, MemorySegment.ofAddress(handle));
        return 0;
    }

    @Override
    public synchronized int nvrtcDestroyProgram(MemorySegment prog) {
        Integer f = injected("nvrtcDestroyProgram");
        if (f != null) {
            return f;
        }
        long handle = prog.get(ValueLayout.ADDRESS, 0).address();
        if (programs.remove(handle) == null) {
            return Nvrtc.NVRTC_ERROR_INVALID_PROGRAM();
        }
        destroys++;
        prog.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        return 0;
    }

    @Override
    public synchronized int nvrtcAddNameExpression(MemorySegment prog, MemorySegment name_expression) {
        Integer f = injected("nvrtcAddNameExpression");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        if (p == null) {
            return Nvrtc.NVRTC_ERROR_INVALID_PROGRAM();
        }
        if (p.compiled) {
            return Nvrtc.NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION();
        }
        p.expressions.add(name_expression.getString(0));
        return 0;
    }

    @Override
    public synchronized int nvrtcCompileProgram(MemorySegment prog, int numOptions, MemorySegment options) {
        Integer f = injected("nvrtcCompileProgram");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        if (p == null) {
            return Nvrtc.NVRTC_ERROR_INVALID_PROGRAM();
        }
        compiles++;
        List<String> read = new ArrayList<>();
        for (int i = 0; i < numOptions; i++) {
            // The fake reads what NVRTC reads: NUL-terminated strings behind raw pointers.
            read.add(options.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(Integer.MAX_VALUE).getString(0));
        }
        lastOptions = List.copyOf(read);
        for (String option : read) {
            if (option.startsWith("--bogus")) {
                p.log = "nvrtc: error: invalid value for option " + option + "\n";
                return Nvrtc.NVRTC_ERROR_INVALID_OPTION();
            }
        }
        if (p.source.contains("#error")) {
            p.log = errorLogFor(p.name, p.source);
            return Nvrtc.NVRTC_ERROR_COMPILATION();
        }
        p.compiled = true;
        p.log = warningLog;
        p.architecture = architectureOf(read);
        p.options = lastOptions;
        p.ptx = ptxFor(p.source, read).getBytes(StandardCharsets.UTF_8);
        for (String expression : p.expressions) {
            p.lowered.put(expression, strings.allocateFrom(loweredFor(expression)));
        }
        return 0;
    }

    @Override
    public synchronized int nvrtcGetProgramLogSize(MemorySegment prog, MemorySegment logSizeRet) {
        Integer f = injected("nvrtcGetProgramLogSize");
        if (f != null) {
            return f;
        }
        logSizeRet.set(ValueLayout.JAVA_LONG, 0, program(prog).log.getBytes(StandardCharsets.UTF_8).length + 1L);
        return 0;
    }

    @Override
    public synchronized int nvrtcGetProgramLog(MemorySegment prog, MemorySegment log) {
        Integer f = injected("nvrtcGetProgramLog");
        if (f != null) {
            return f;
        }
        log.setString(0, program(prog).log);
        return 0;
    }

    @Override
    public synchronized int nvrtcGetPTXSize(MemorySegment prog, MemorySegment ptxSizeRet) {
        Integer f = injected("nvrtcGetPTXSize");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        if (!p.compiled) {
            return Nvrtc.NVRTC_ERROR_INVALID_PROGRAM();
        }
        ptxSizeRet.set(ValueLayout.JAVA_LONG, 0, p.ptx.length + 1L);
        return 0;
    }

    @Override
    public synchronized int nvrtcGetPTX(MemorySegment prog, MemorySegment ptx) {
        Integer f = injected("nvrtcGetPTX");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        MemorySegment.copy(p.ptx, 0, ptx, ValueLayout.JAVA_BYTE, 0, p.ptx.length);
        ptx.set(ValueLayout.JAVA_BYTE, p.ptx.length, (byte) 0);
        return 0;
    }

    @Override
    public synchronized int nvrtcGetCUBINSize(MemorySegment prog, MemorySegment cubinSizeRet) {
        Integer f = injected("nvrtcGetCUBINSize");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        if (!p.compiled || !p.architecture.startsWith("sm_")) {
            return Nvrtc.NVRTC_ERROR_INVALID_INPUT();
        }
        cubinSizeRet.set(ValueLayout.JAVA_LONG, 0, cubinFor(p.source, p.options).length);
        return 0;
    }

    @Override
    public synchronized int nvrtcGetCUBIN(MemorySegment prog, MemorySegment cubin) {
        Integer f = injected("nvrtcGetCUBIN");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        byte[] image = cubinFor(p.source, p.options);
        MemorySegment.copy(image, 0, cubin, ValueLayout.JAVA_BYTE, 0, image.length);
        return 0;
    }

    @Override
    public synchronized int nvrtcGetLoweredName(MemorySegment prog, MemorySegment name_expression,
            MemorySegment lowered_name) {
        Integer f = injected("nvrtcGetLoweredName");
        if (f != null) {
            return f;
        }
        Program p = program(prog);
        if (!p.compiled) {
            return Nvrtc.NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION();
        }
        MemorySegment lowered = p.lowered.get(name_expression.getString(0));
        if (lowered == null) {
            return Nvrtc.NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID();
        }
        lowered_name.set(ValueLayout.ADDRESS, 0, lowered);
        return 0;
    }
}
