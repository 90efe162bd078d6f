package dev.gatun.cuda.blas;

import dev.gatun.cuda.blas.internal.bindings.cublaslt.cublasLtMatmulHeuristicResult_t;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * cuBLASLt's choice for one shape: the heuristic's result (its {@code cublasLtMatmulAlgo_t} is
 * passed to every matmul of that shape) and the workspace it needs. Its memory is the garbage
 * collector's ({@code Arena.ofAuto()}): plans of the same shape share it, and none of them can
 * outlive it.
 *
 * <p>{@link #algo} is a segment of the global scope over the result's {@code algo} member, for the
 * warm call: a downcall acquires and releases an automatic arena's session around the call (two
 * atomic updates), not the global one's. Safety: nothing keeps the result alive through the view,
 * so a matmul keeps itself, and with it this record and {@link #result}, reachable until its call
 * returned ({@code Reference.reachabilityFence}).
 *
 * @param result the {@code cublasLtMatmulHeuristicResult_t}
 * @param algo its {@code algo} member, as a segment of the global scope
 * @param workspaceBytes the workspace the algorithm needs
 */
record MatmulAlgorithm(MemorySegment result, MemorySegment algo, long workspaceBytes) {

    static MatmulAlgorithm allocate() {
        MemorySegment result = cublasLtMatmulHeuristicResult_t.allocate(Arena.ofAuto());
        MemorySegment algo = cublasLtMatmulHeuristicResult_t.algo(result);
        return new MatmulAlgorithm(result, MemorySegment.ofAddress(algo.address()).reinterpret(algo.byteSize()), 0);
    }

    /** {@return this result with the workspace size the heuristic wrote} */
    MatmulAlgorithm filled() {
        return new MatmulAlgorithm(result, algo, cublasLtMatmulHeuristicResult_t.workspaceSize(result));
    }
}
