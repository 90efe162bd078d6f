package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.load.GeneratedConstants;
import java.util.Map;

/** nvrtcResult names, read from the generated constants, so no NVRTC library is needed to name one. */
public final class NvrtcResults {

    private static final Map<Integer, String> NAMES = GeneratedConstants.names(Nvrtc.class,
            n -> n.equals("NVRTC_SUCCESS") || n.startsWith("NVRTC_ERROR_"));

    private NvrtcResults() {
    }

    /** The enumerator's name, e.g. {@code NVRTC_ERROR_COMPILATION}, or {@code nvrtcResult <n>}. */
    public static String name(int result) {
        String name = NAMES.get(result);
        return name != null ? name : "nvrtcResult " + result;
    }
}
