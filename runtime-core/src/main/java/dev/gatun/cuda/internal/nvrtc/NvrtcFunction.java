package dev.gatun.cuda.internal.nvrtc;

import dev.gatun.cuda.nvrtc.NvrtcTooOldException;

/**
 * The NVRTC functions Gatun calls ({@link NvrtcApi}), each with the NVRTC version that
 * introduced it (CUDA's encoding, 1000 * major + 10 * minor), from NVRTC's release notes:
 * {@link NativeNvrtcApi} binds each on its first call and refuses one newer than the loaded
 * NVRTC, or missing from it, with {@link dev.gatun.cuda.nvrtc.NvrtcTooOldException} from that call.
 * NVRTC 12.x and 13.x (the versions {@code NvrtcLibrary} accepts) have every one: NVRTC 13.0 took
 * out only functions Gatun does not call ({@code nvrtcGetNVVM} and its size).
 */
public enum NvrtcFunction {
    nvrtcVersion(7000),
    nvrtcCreateProgram(7000),
    nvrtcDestroyProgram(7000),
    nvrtcCompileProgram(7000),
    nvrtcGetProgramLogSize(7000),
    nvrtcGetProgramLog(7000),
    nvrtcGetPTXSize(7000),
    nvrtcGetPTX(7000),
    nvrtcAddNameExpression(8000),
    nvrtcGetLoweredName(8000),
    nvrtcGetCUBINSize(11010),
    nvrtcGetCUBIN(11010);

    private final int version;

    NvrtcFunction(int version) {
        this.version = version;
    }

    /** {@return the NVRTC version that introduced the function, e.g. 11010 for 11.1} */
    public int version() {
        return version;
    }

    /**
     * {@return the exception for a call of this function, which the NVRTC at {@code library}, of
     * version {@code installed}, lacks}
     */
    public NvrtcTooOldException missingFrom(String library, int installed) {
        return new NvrtcTooOldException(name(), version, installed, library);
    }
}
