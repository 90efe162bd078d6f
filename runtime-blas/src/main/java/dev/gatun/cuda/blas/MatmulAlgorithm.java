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
 * @param result the {@code cublasLtMatmulHeuristicResult_t}
 * @param algo its {@code algo} member
 * @param workspaceBytes the workspace the algorithm needs
 */
record MatmulAlgorithm(MemorySegment result, MemorySegment algo, long workspaceBytes) {

    static MatmulAlgorithm allocate() {
        MemorySegment result = cublasLtMatmulHeuristicResult_t.allocate(Arena.ofAuto());
        return new MatmulAlgorithm(result, cublasLtMatmulHeuristicResult_t.algo(result), 0);
    }

    /** {@return this result with the workspace size the heuristic wrote} */
    MatmulAlgorithm filled() {
        return new MatmulAlgorithm(result, algo, cublasLtMatmulHeuristicResult_t.workspaceSize(result));
    }
}
