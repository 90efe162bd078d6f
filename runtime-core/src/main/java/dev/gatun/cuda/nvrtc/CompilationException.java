package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.CudaException;
import java.util.List;

/**
 * NVRTC rejected a program: {@code nvrtcCompileProgram} returned an error. The message and
 * {@link #log()} hold the compiler's complete log (the errors with their line numbers, or the
 * option it refused), and {@link #options()} the exact options it was given, so that the
 * failure can be reproduced without rerunning Gatun.
 *
 * <p>A {@link CudaException} whose {@link #resultName()} is the nvrtcResult, typically
 * {@code NVRTC_ERROR_COMPILATION} (fix the source) or {@code NVRTC_ERROR_INVALID_OPTION}
 * (fix {@link CompileOptions#options()}).
 */
public final class CompilationException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** The name NVRTC used for the source in its log. */
    private final String programName;
    /** Every option NVRTC was given, in order. */
    private final List<String> options;
    /** The compiler's complete log. */
    private final String log;

    /**
     * Reports a failed compile with everything needed to reproduce it.
     *
     * @param result the nvrtcResult number
     * @param resultName its name, e.g. {@code NVRTC_ERROR_COMPILATION}
     * @param programName the program's name
     * @param options every option NVRTC was given, in order
     * @param log the compiler's full log
     */
    public CompilationException(int result, String resultName, String programName, List<String> options,
            String log) {
        super(result, resultName, log.isEmpty() ? "NVRTC wrote no log" : "compiler log:\n" + log,
                "NVRTC compiling " + programName + " with options " + options, -1);
        this.programName = programName;
        this.options = List.copyOf(options);
        this.log = log;
    }

    /** {@return the name NVRTC used for the source in its log ({@link CompileOptions#programName()})} */
    public String programName() {
        return programName;
    }

    /** {@return every option NVRTC was given, in order, the architecture and include options included} */
    public List<String> options() {
        return options;
    }

    /** {@return the compiler's complete log, unabridged} */
    public String log() {
        return log;
    }
}
