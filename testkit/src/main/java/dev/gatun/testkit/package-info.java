/**
 * gatun-testkit: tests of GPU host code that run on every pull request, without a GPU.
 *
 * <p>A {@link dev.gatun.testkit.GpuUnderTest} is a Gatun {@code CudaContext} on device 0 of a
 * real driver or on a {@link dev.gatun.testkit.SimulatedGpu} (Gatun's simulated driver: streams,
 * events, graphs, memory pools and kernels written in Java, run on the CPU), with kernels
 * registered by name ({@link dev.gatun.testkit.KernelCode} for the GPU,
 * {@link dev.gatun.testkit.JavaKernel} for the simulator) and {@link dev.gatun.testkit.Faults}
 * injected into its driver calls. {@link dev.gatun.testkit.GpuOrSimulated} runs one test class
 * both ways: on the GPU where one is present, on the simulator otherwise
 * ({@link dev.gatun.testkit.TestTarget}). On the class path, or on the module path as module
 * {@code dev.gatun.testkit} (the README says how); it brings no logging binding of its own.
 */
package dev.gatun.testkit;
