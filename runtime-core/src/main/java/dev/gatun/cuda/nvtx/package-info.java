/**
 * NVTX ranges and markers, for the profilers engines use (Nsight Systems, Nsight Compute): a
 * range says "prefill step 12" around the kernels it launched, a marker says which replay a
 * kernel belongs to. Gatun speaks the NVTX v3 protocol itself, in Java: it loads the tool's
 * injection library named by {@code NVTX_INJECTION64_PATH} (the profiler sets it) and calls
 * through the function table the tool fills, with no native library of its own.
 *
 * <p>With no tool attached, every call returns at once, allocates nothing and costs a few
 * nanoseconds (runtime-bench's {@code NvtxBenchmark}). With a tool, a range or marker of an
 * {@link dev.gatun.cuda.nvtx.NvtxLabel} (a registered string, built once) allocates nothing either;
 * the {@code String} overloads marshal their text on each call, for ad-hoc use.
 *
 * <p>Entry point: {@link dev.gatun.cuda.nvtx.Nvtx}. Gatun can also range its own operations
 * (launches, copies, captures, graph replays, pool misses, out-of-memory rungs): see
 * {@link dev.gatun.cuda.nvtx.Nvtx#RANGES_PROPERTY}.
 */
package dev.gatun.cuda.nvtx;
