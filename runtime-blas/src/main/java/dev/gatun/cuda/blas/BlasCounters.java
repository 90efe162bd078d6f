package dev.gatun.cuda.blas;

/**
 * What a context's {@link Blas} has done, for tests and monitoring.
 *
 * @param workspaces the per-stream workspaces allocated now
 * @param workspaceBytes their bytes (Gatun device memory, also in the context's own counters)
 * @param heuristicQueries cuBLASLt heuristic queries made (one per new shape: a warm call makes none)
 * @param matmuls cuBLASLt matmuls submitted
 * @param gemms cuBLAS GEMMs submitted
 * @param softmaxes cuDNN softmaxes submitted
 * @param attentions cuDNN attention forwards submitted
 */
public record BlasCounters(long workspaces, long workspaceBytes, long heuristicQueries, long matmuls, long gemms,
        long softmaxes, long attentions) {
}
