/**
 * Runtime compilation of CUDA C++ with NVRTC, and a cache of what it compiled.
 *
 * <ul>
 *   <li>{@link dev.gatun.cuda.nvrtc.NvrtcLibrary} finds and loads NVRTC, and gives a
 *       {@link dev.gatun.cuda.nvrtc.NvrtcCompiler} that compiles
 *       ({@link dev.gatun.cuda.nvrtc.CompileOptions}, {@link dev.gatun.cuda.nvrtc.CompileTarget}) into a
 *       {@link dev.gatun.cuda.nvrtc.CompiledProgram}, or fails with a
 *       {@link dev.gatun.cuda.nvrtc.CompilationException} carrying the log.
 *   <li>{@link dev.gatun.cuda.nvrtc.KernelCache} keeps compiled images on disk, optionally
 *       authenticated, and counts what it did ({@link dev.gatun.cuda.nvrtc.KernelCacheCounters}).
 * </ul>
 *
 * <p>The names follow {@code dev.gatun.cuda}'s rules ("One naming" in its package comment).
 */
package dev.gatun.cuda.nvrtc;
