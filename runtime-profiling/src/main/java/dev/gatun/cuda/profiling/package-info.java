/**
 * GPU activity from CUPTI as JFR events: {@link dev.gatun.cuda.profiling.CuptiActivity}. Each
 * kernel, copy and memset the GPU ran while it was started becomes one event
 * ({@code dev.gatun.GpuKernel}, {@code dev.gatun.GpuMemcpy}, {@code dev.gatun.GpuMemset},
 * category "Gatun", "GPU") with the GPU's start, end and duration, the device, context and
 * stream, the correlation id CUPTI gave the submission and, for a kernel, its name, grid and
 * block, and the graph and node it ran in when a graph launched it.
 */
package dev.gatun.cuda.profiling;
