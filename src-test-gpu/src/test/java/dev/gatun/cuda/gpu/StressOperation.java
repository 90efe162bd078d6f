package dev.gatun.cuda.gpu;

import java.util.Map;

/** What a stress worker does in one step; each step checks its own result against the CPU. */
enum StressOperation {
    /** Pooled device buffers (context allocation), a pinned upload, a kernel, a pinned download. */
    POOLED,
    /** The same with a buffer above the pool's largest class: a plain cuMemAlloc and cuMemFree. */
    PLAIN,
    /** The same with stream-ordered buffers (cuMemAllocAsync), freed in stream order. */
    STREAM_ORDERED,
    /** Upload on the shared copy stream, kernel on one own stream, download on the other, joined by fences. */
    FENCED_ACROSS_STREAMS,
    /** A round trip between two timing events, whose elapsed time must be a finite number >= 0. */
    TIMED,
    /** A GraphSlot captured, sometimes re-captured with new scalars, and replayed on fresh data. */
    GRAPH,
    /** A validation-latch generation around a gather kernel, with an out-of-range index a third of the time. */
    LATCH,
    /** ModuleRegistry.load of another image under the same name; the kernel of the old image still runs it. */
    MODULE_REPLACEMENT,
    /** A temporary stream and its buffers closed while their upload, kernel and download are still queued. */
    CLOSE_WHILE_QUEUED,
    /** A replay of the worker's graph captured into the shared capture arena, on its own or a shared stream. */
    ARENA_REPLAY,
    /** A stream write of a mapped word and another stream's wait for it (stream memory operations). */
    MAPPED_WORD,
    /** A batch of uploads into pooled and stream-ordered buffers and a batch of downloads back (CopyBatch). */
    COPY_BATCH;

    /** How often each is drawn, relative to the others. */
    static final Map<StressOperation, Integer> WEIGHTS = Map.ofEntries(Map.entry(POOLED, 20), Map.entry(PLAIN, 1),
            Map.entry(STREAM_ORDERED, 15), Map.entry(FENCED_ACROSS_STREAMS, 15), Map.entry(TIMED, 8), Map.entry(GRAPH, 15),
            Map.entry(LATCH, 6), Map.entry(MODULE_REPLACEMENT, 4), Map.entry(CLOSE_WHILE_QUEUED, 15),
            Map.entry(ARENA_REPLAY, 12), Map.entry(MAPPED_WORD, 12), Map.entry(COPY_BATCH, 12));
}
