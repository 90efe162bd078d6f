/**
 * Gatun's Java Flight Recorder events (category "Gatun"): module loads, NVRTC compiles, graph
 * captures, instantiations and updates, synchronous transfers, retirement backlog, device pool
 * misses, out-of-memory climbs and their rungs, cap events and context poisoning. Each class has
 * a static {@code start()} that returns null, and allocates nothing, while no recording enables
 * the event; callers test for null. No event is emitted per launch or per replay.
 */
package dev.gatun.cuda.internal.events;
