package dev.gatun.cuda.profiling.internal;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * A memset the GPU ran, as CUPTI's activity record tells it (committed when CUPTI hands over the buffer that
 * holds it, so the event's own time is when Gatun read it; the GPU's times are its fields, in
 * CUPTI's nanosecond clock). No stack trace: it is read on CUPTI's thread.
 */
@Name("dev.gatun.GpuMemset")
@Label("GPU Memset")
@Category({"Gatun", "GPU"})
@Description("A memset the GPU ran, from CUPTI")
@StackTrace(false)
public final class GpuMemsetEvent extends Event {

    /** Tells whether a recording enables this event, so that a record nobody records costs no object. */
    static final GpuMemsetEvent PROBE = new GpuMemsetEvent();

    @Label("GPU Start")
    @Description("When the GPU started it, in CUPTI's clock (ns)")
    public long gpuStart;
    @Label("GPU End")
    @Description("When the GPU finished it, in CUPTI's clock (ns)")
    public long gpuEnd;
    @Label("GPU Duration")
    @Timespan(Timespan.NANOSECONDS)
    public long gpuDuration;
    @Label("Device")
    public int device;
    @Label("Context Id")
    @Description("CUPTI's id of the context")
    public int contextId;
    @Label("Stream Id")
    @Description("CUPTI's id of the stream")
    public int streamId;
    @Label("Correlation Id")
    @Description("CUPTI's id of the submission (a launch, a copy, a graph launch), shared with its API record")
    public int correlationId;
    @Label("Value")
    public int value;
    @Label("Bytes")
    @DataAmount
    public long bytes;
    @Label("Graph Id")
    @Description("The graph it ran in, 0 when no graph launched it")
    public long graphId;
    @Label("Graph Node Id")
    @Description("Its node in that graph, 0 when no graph launched it")
    public long graphNodeId;
}
