package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** One NVRTC compile request: answered from the kernel cache, or compiled. */
@Name("dev.gatun.NvrtcCompile")
@Label("NVRTC Compile")
@Category("Gatun")
@Description("A CUDA C++ source compiled by NVRTC, or found in the kernel cache")
@StackTrace(false)
public final class NvrtcCompileEvent extends Event {

    private static final NvrtcCompileEvent PROBE = new NvrtcCompileEvent();

    @Label("Program")
    public String program;
    @Label("Target")
    public String target;
    @Label("Cache Hit")
    public boolean cacheHit;
    @Label("Source Length")
    @Description("Characters of CUDA C++")
    public long sourceLength;
    @Label("Image Size")
    @DataAmount
    public long imageBytes;
    @Label("Compiled")
    @Description("False when NVRTC rejected the program")
    public boolean compiled;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static NvrtcCompileEvent start() {
        return Probes.begun(PROBE, NvrtcCompileEvent::new);
    }
}
