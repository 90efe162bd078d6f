package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;

/** One installed capture: its graph and the executable a replay launches. */
record Segment(MemorySegment graph, MemorySegment exec) {
}
