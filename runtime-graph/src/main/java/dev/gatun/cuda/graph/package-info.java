/**
 * gatun-graph: graph lifecycles per owner and slot, and the validation latch, built on gatun-core's
 * public API alone ({@code Graph}, {@code GraphExec} and {@code StreamCapture} are core owners).
 *
 * <h2>The types, by concern</h2>
 *
 * <ul>
 *   <li><b>One context's graphs:</b> {@link dev.gatun.cuda.graph.CudaGraphs}, which owns a
 *       {@link dev.gatun.cuda.graph.GraphLifecycles} and a latch with its device word.
 *   <li><b>Lifecycles:</b> {@link dev.gatun.cuda.graph.GraphLifecycles} registers
 *       {@link dev.gatun.cuda.graph.SlotGroup}s, each holding named {@link dev.gatun.cuda.graph.GraphSlot}s
 *       ({@link dev.gatun.cuda.graph.SlotPhase}) that capture, replay, update in place and reset;
 *       their {@link dev.gatun.cuda.graph.GraphCounters}.
 *   <li><b>The validation latch:</b> {@link dev.gatun.cuda.graph.ValidationLatch},
 *       {@link dev.gatun.cuda.graph.ValidationRecipient}, {@link dev.gatun.cuda.graph.ValidationPhase},
 *       {@link dev.gatun.cuda.graph.ValidationCounters}, {@link dev.gatun.cuda.graph.ValidationLatchException};
 *       the word it reads, {@link dev.gatun.cuda.graph.LatchDeviceWord}, and the bits kernels set in
 *       it, {@link dev.gatun.cuda.graph.LatchFlags}.
 *   <li><b>Device headers</b> for kernels compiled with NVRTC: {@link dev.gatun.cuda.graph.LatchHeader}
 *       (setting the latch) and {@link dev.gatun.cuda.graph.ConditionalHeader} (setting a conditional
 *       node's handle).
 * </ul>
 *
 * <p>The names follow gatun-core's rules ({@code dev.gatun.cuda}'s package comment, "One naming"):
 * counts are {@code *Counters} records read with {@code counters()}, summed over a group or a
 * registry by the same name.
 */
package dev.gatun.cuda.graph;
