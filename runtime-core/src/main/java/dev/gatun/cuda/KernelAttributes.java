package dev.gatun.cuda;

/**
 * A compiled kernel's resource use, from {@code cuFuncGetAttribute}.
 *
 * @param registersPerThread registers each thread uses
 * @param staticSharedBytes statically declared shared memory per block
 * @param constantBytes constant memory the function uses
 * @param localBytesPerThread local memory (spills, stack) per thread
 * @param maxThreadsPerBlock the most threads a block of this function can have (register-limited)
 * @param maxDynamicSharedBytes the dynamic shared memory the function is currently allowed
 * @param ptxVersion PTX ISA version the function was compiled for (major * 10 + minor)
 * @param binaryVersion architecture of the binary (major * 10 + minor, e.g. 90)
 */
public record KernelAttributes(int registersPerThread, int staticSharedBytes, int constantBytes, int localBytesPerThread,
        int maxThreadsPerBlock, int maxDynamicSharedBytes, int ptxVersion, int binaryVersion) {
}
