/**
 * Gatun's graph module: captured CUDA graphs and their lifecycles per owner and slot, in-place
 * executable update, and the device validation latch. The driver side reaches these state
 * machines through the {@link dev.gatun.cuda.graph.GraphBackend} and
 * {@link dev.gatun.cuda.graph.LatchDeviceWord} seams.
 */
module dev.gatun.cuda.graph {
    requires dev.gatun.cuda;
    requires dev.gatun.cuda.bindings;
    requires org.slf4j;

    exports dev.gatun.cuda.graph;
}
