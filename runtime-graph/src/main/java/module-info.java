/**
 * Gatun's graph module: graph lifecycles per slot group and slot, and the device validation latch,
 * built on runtime-core's public API ({@code StreamCapture}, {@code Graph}, {@code GraphExec}).
 * The latch reaches its device word through the {@link dev.gatun.cuda.graph.LatchDeviceWord} seam.
 */
module dev.gatun.cuda.graph {
    // Transitive: the graph module's API speaks in core's types (Stream, CudaContext, DeviceBuffer),
    // so a module that requires only this one must read core too.
    requires transitive dev.gatun.cuda;
    requires org.slf4j;

    exports dev.gatun.cuda.graph;
}
