package dev.gatun.cuda.profiling.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CUPTI 13's activity records as this module reads them: the offsets against the header, by the
 * C compiler, and each record's JFR event, from records built in memory.
 */
class ActivityRecordsTest {

    private static final Path CUDA_INCLUDE = Path.of("/usr/local/cuda/include");

    @Test
    void theOffsetsAndKindsAreCupti13sOwn() throws IOException, InterruptedException {
        assumeTrue(Files.isRegularFile(CUDA_INCLUDE.resolve("cupti_activity.h")), "needs the CUDA headers at "
                + CUDA_INCLUDE);
        StringBuilder c = new StringBuilder("#include <stddef.h>\n#include <cupti.h>\n");
        String k = "CUpti_ActivityKernel10";
        same(c, "offsetof(" + k + ", kind)", ActivityRecords.KIND);
        same(c, "offsetof(" + k + ", start)", ActivityRecords.START);
        same(c, "offsetof(" + k + ", end)", ActivityRecords.END);
        same(c, "offsetof(" + k + ", deviceId)", ActivityRecords.KERNEL_DEVICE);
        same(c, "offsetof(" + k + ", contextId)", ActivityRecords.KERNEL_CONTEXT);
        same(c, "offsetof(" + k + ", streamId)", ActivityRecords.KERNEL_STREAM);
        same(c, "offsetof(" + k + ", gridX)", ActivityRecords.KERNEL_GRID_X);
        same(c, "offsetof(" + k + ", gridZ)", ActivityRecords.KERNEL_GRID_X + 8);
        same(c, "offsetof(" + k + ", blockX)", ActivityRecords.KERNEL_GRID_X + 12);
        same(c, "offsetof(" + k + ", blockZ)", ActivityRecords.KERNEL_GRID_X + 20);
        same(c, "offsetof(" + k + ", correlationId)", ActivityRecords.KERNEL_CORRELATION);
        same(c, "offsetof(" + k + ", name)", ActivityRecords.KERNEL_NAME);
        same(c, "offsetof(" + k + ", graphNodeId)", ActivityRecords.KERNEL_GRAPH_NODE);
        same(c, "offsetof(" + k + ", graphId)", ActivityRecords.KERNEL_GRAPH);
        same(c, "sizeof(" + k + ")", ActivityRecords.MAX_RECORD_BYTES);
        for (String r : List.of("CUpti_ActivityMemcpy6", "CUpti_ActivityMemset4")) {
            same(c, "offsetof(" + r + ", start)", ActivityRecords.START);
            same(c, "offsetof(" + r + ", end)", ActivityRecords.END);
            same(c, "offsetof(" + r + ", bytes)", ActivityRecords.BYTES);
            same(c, "offsetof(" + r + ", deviceId)", ActivityRecords.DEVICE);
            same(c, "offsetof(" + r + ", contextId)", ActivityRecords.CONTEXT);
            same(c, "offsetof(" + r + ", streamId)", ActivityRecords.STREAM);
            same(c, "offsetof(" + r + ", correlationId)", ActivityRecords.CORRELATION);
            same(c, "offsetof(" + r + ", graphNodeId)", ActivityRecords.GRAPH_NODE);
            same(c, "offsetof(" + r + ", graphId)", ActivityRecords.GRAPH);
            same(c, "sizeof(" + r + ") <= " + ActivityRecords.MAX_RECORD_BYTES, 1);
        }
        same(c, "offsetof(CUpti_ActivityMemcpy6, copyKind)", ActivityRecords.COPY_KIND);
        same(c, "offsetof(CUpti_ActivityMemset4, value)", ActivityRecords.COPY_KIND);
        same(c, "CUPTI_ACTIVITY_KIND_MEMCPY", ActivityRecords.KIND_MEMCPY);
        same(c, "CUPTI_ACTIVITY_KIND_MEMSET", ActivityRecords.KIND_MEMSET);
        same(c, "CUPTI_ACTIVITY_KIND_KERNEL", ActivityRecords.KIND_KERNEL);
        same(c, "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", ActivityRecords.KIND_CONCURRENT_KERNEL);
        same(c, "CUPTI_ACTIVITY_MEMCPY_KIND_DTOD", 8);
        same(c, "CUPTI_SUCCESS", Cupti.SUCCESS);
        same(c, "CUPTI_ERROR_MAX_LIMIT_REACHED", Cupti.MAX_LIMIT_REACHED);
        same(c, "CUPTI_ACTIVITY_FLAG_FLUSH_FORCED", Cupti.FLUSH_FORCED);
        same(c, "CUPTI_API_VERSION >= " + Cupti.FIRST_VERSION, 1);
        Path file = Files.createTempFile("cupti-check", ".c");
        try {
            Files.writeString(file, c);
            Process gcc = new ProcessBuilder("gcc", "-fsyntax-only", "-Wall", "-I" + CUDA_INCLUDE, file.toString())
                    .redirectErrorStream(true).start();
            String said = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(gcc.waitFor(120, TimeUnit.SECONDS), "gcc finished");
            assertEquals(0, gcc.exitValue(), said);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static void same(StringBuilder c, String expression, long java) {
        c.append("_Static_assert((long) (").append(expression).append(") == ").append(java).append("L, \"")
                .append(expression).append(" is not ").append(java).append(" (ActivityRecords)\");\n");
    }

    @Test
    void eachRecordBecomesItsEventWithTheGpusTimes(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("records.jfr");
        try (Arena arena = Arena.ofConfined(); Recording recording = new Recording()) {
            recording.enable(GpuKernelEvent.class);
            recording.enable(GpuMemcpyEvent.class);
            recording.enable(GpuMemsetEvent.class);
            recording.start();
            MemorySegment kernel = arena.allocate(ActivityRecords.MAX_RECORD_BYTES, 8);
            kernel.set(JAVA_INT, ActivityRecords.KIND, ActivityRecords.KIND_CONCURRENT_KERNEL);
            times(kernel, 1_000, 251_000);
            kernel.set(JAVA_INT, ActivityRecords.KERNEL_DEVICE, 3);
            kernel.set(JAVA_INT, ActivityRecords.KERNEL_CONTEXT, 7);
            kernel.set(JAVA_INT, ActivityRecords.KERNEL_STREAM, 13);
            for (int i = 0; i < 6; i++) {
                kernel.set(JAVA_INT, ActivityRecords.KERNEL_GRID_X + 4L * i, new int[] {4, 2, 1, 64, 1, 1}[i]);
            }
            kernel.set(JAVA_INT, ActivityRecords.KERNEL_CORRELATION, 99);
            kernel.set(ADDRESS, ActivityRecords.KERNEL_NAME, arena.allocateFrom("saxpy"));
            kernel.set(JAVA_LONG, ActivityRecords.KERNEL_GRAPH_NODE, 0x1234_5678_9AL);
            kernel.set(JAVA_INT, ActivityRecords.KERNEL_GRAPH, -2); // an unsigned id above 2^31
            ActivityRecords.commitKernel(kernel);
            MemorySegment copy = arena.allocate(ActivityRecords.MAX_RECORD_BYTES, 8);
            copy.set(JAVA_INT, ActivityRecords.KIND, ActivityRecords.KIND_MEMCPY);
            copy.set(JAVA_BYTE, ActivityRecords.COPY_KIND, (byte) 2);
            copy.set(JAVA_LONG, ActivityRecords.BYTES, 4096);
            times(copy, 5_000, 7_500);
            copy.set(JAVA_INT, ActivityRecords.CORRELATION, 100);
            ActivityRecords.commitMemcpy(copy);
            MemorySegment memset = arena.allocate(ActivityRecords.MAX_RECORD_BYTES, 8);
            memset.set(JAVA_INT, ActivityRecords.KIND, ActivityRecords.KIND_MEMSET);
            memset.set(JAVA_INT, ActivityRecords.COPY_KIND, 0x7FC0DEAD);
            memset.set(JAVA_LONG, ActivityRecords.BYTES, 1024);
            times(memset, 8_000, 8_800);
            ActivityRecords.commitMemset(memset);
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        RecordedEvent k = only(events, "dev.gatun.GpuKernel");
        assertEquals("saxpy", k.getString("name"));
        assertEquals(250_000, k.getLong("gpuDuration"));
        assertEquals(1_000, k.getLong("gpuStart"));
        assertEquals(3, k.getInt("device"));
        assertEquals(7, k.getInt("contextId"));
        assertEquals(13, k.getInt("streamId"));
        assertEquals(99, k.getInt("correlationId"));
        assertEquals("4x2x1", k.getString("grid"));
        assertEquals("64x1x1", k.getString("block"));
        assertEquals(0xFFFF_FFFEL, k.getLong("graphId"));
        assertEquals(0x1234_5678_9AL, k.getLong("graphNodeId"));
        RecordedEvent m = only(events, "dev.gatun.GpuMemcpy");
        assertEquals("DtoH", m.getString("copyKind"));
        assertEquals(4096, m.getLong("bytes"));
        assertEquals(2_500, m.getLong("gpuDuration"));
        assertEquals(100, m.getInt("correlationId"));
        RecordedEvent s = only(events, "dev.gatun.GpuMemset");
        assertEquals(0x7FC0DEAD, s.getInt("value"));
        assertEquals(1024, s.getLong("bytes"));
        assertEquals(800, s.getLong("gpuDuration"));
    }

    private static void times(MemorySegment record, long start, long end) {
        record.set(JAVA_LONG, ActivityRecords.START, start);
        record.set(JAVA_LONG, ActivityRecords.END, end);
    }

    private static RecordedEvent only(List<RecordedEvent> events, String name) {
        List<RecordedEvent> of = events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
        assertEquals(1, of.size(), name + ": " + of);
        return of.getFirst();
    }
}
