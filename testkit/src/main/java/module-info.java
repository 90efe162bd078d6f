/**
 * gatun-testkit: tests of GPU host code on Gatun's simulated driver, or on a real GPU. API:
 * {@code dev.gatun.testkit}. The simulated driver ({@code dev.gatun.cuda.testing}) is inside and
 * not exported: it implements gatun-core's internal driver seam, which gatun-core exports to this
 * module alone.
 */
module dev.gatun.testkit {
    requires transitive dev.gatun.cuda;
    // The CUresult constants a test hands to Faults (CudaDriver.CUDA_ERROR_OUT_OF_MEMORY()), and
    // the driver's structs the simulator reads.
    requires transitive dev.gatun.cuda.bindings;
    requires transitive org.junit.jupiter.api;
    requires org.slf4j;

    exports dev.gatun.testkit;
}
