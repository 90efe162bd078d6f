package dev.gatun.cuda.internal.pool;

import java.util.function.Supplier;

/**
 * Finds who asked for device memory: the first frame on the stack outside Gatun's library code
 * (for the device pool's call-site profile, and for memory reports, from a recorded stack).
 * Library code is runtime-core and runtime-graph: the API package {@code dev.gatun.cuda} itself
 * and everything under {@code dev.gatun.cuda.internal} and {@code dev.gatun.cuda.graph}. Other
 * Gatun code that merely uses the library (the CLI, benchmarks) counts as a caller.
 */
public final class CallSites implements Supplier<StackTraceElement> {

    /** Reported when every frame is library code (a thread that Gatun itself started). */
    public static final StackTraceElement UNATTRIBUTED =
            new StackTraceElement("(Gatun)", "(no caller outside Gatun)", null, -1);

    private static final String API = "dev.gatun.cuda.";
    private static final String INTERNAL = API + "internal.";
    private static final String GRAPH = API + "graph.";

    private static final StackWalker WALKER = StackWalker.getInstance();

    @Override
    public StackTraceElement get() {
        return WALKER.walk(frames -> frames.filter(f -> !isLibrary(f.getClassName())).findFirst()
                .map(StackWalker.StackFrame::toStackTraceElement).orElse(UNATTRIBUTED));
    }

    /** The first frame of a recorded {@code stack} outside Gatun's library code, or {@link #UNATTRIBUTED}. */
    public static StackTraceElement callerIn(StackTraceElement[] stack) {
        for (StackTraceElement frame : stack) {
            if (!isLibrary(frame.getClassName())) {
                return frame;
            }
        }
        return UNATTRIBUTED;
    }

    /** Whether a class (binary name) belongs to Gatun's library code. */
    public static boolean isLibrary(String className) {
        if (!className.startsWith(API)) {
            return false;
        }
        return className.indexOf('.', API.length()) < 0 || className.startsWith(INTERNAL)
                || className.startsWith(GRAPH);
    }
}
