/**
 * Gatun's profiling module: the GPU's own account of kernels, copies and memsets, from CUPTI's
 * activity API, as Java Flight Recorder events beside gatun-core's host-side ones. Off until a
 * program starts it ({@link dev.gatun.cuda.profiling.CuptiActivity#start()}).
 */
module dev.gatun.cuda.profiling {
    requires transitive dev.gatun.cuda;
    requires dev.gatun.cuda.bindings;
    requires jdk.jfr;
    requires org.slf4j;

    exports dev.gatun.cuda.profiling;
}
