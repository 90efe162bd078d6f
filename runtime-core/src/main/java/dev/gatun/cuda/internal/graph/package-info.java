/**
 * The graph wing: the state of graphs, their node building, conditional nodes, stream captures
 * and executables, under the public faces {@code Graph}, {@code StreamCapture} and
 * {@code GraphExec}. Keyed on internal types ({@code NativeResource}, {@code Holds},
 * {@code StreamState}, {@code GraphAllocations}, {@code ArenaSpace}), never on owners; it sits on
 * top of {@code internal/} and nothing else in {@code internal/} uses it.
 */
package dev.gatun.cuda.internal.graph;
