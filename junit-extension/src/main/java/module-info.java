/**
 * Gatun's JUnit 5 extension for GPU tests: {@code @RequiresGpu} skips a test without a GPU (or
 * fails it when a GPU is required), injects {@code Device}, {@code CudaContext} and
 * {@code Stream} parameters, fails a test that leaves owners of its context open, and keeps a
 * sticky error from failing every later test on its device.
 */
module dev.gatun.cuda.junit {
    requires transitive dev.gatun.cuda;
    requires transitive org.junit.jupiter.api;
    requires org.slf4j;

    exports dev.gatun.cuda.junit;
}
