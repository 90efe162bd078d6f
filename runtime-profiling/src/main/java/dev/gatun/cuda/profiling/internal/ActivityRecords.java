package dev.gatun.cuda.profiling.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;

/**
 * The activity records this module reads, as CUPTI 13 writes them ({@code cupti_activity.h} of
 * CUDA 13.0, whose structures are {@code PACKED_ALIGNMENT}: 8-aligned, no padding inserted by
 * the compiler beyond what the header spells out): {@code CUpti_ActivityKernel10} (lines
 * 2909-3212; 216 bytes), {@code CUpti_ActivityMemcpy6} (2135-2266; 96 bytes) and
 * {@code CUpti_ActivityMemset4} (2409-2514; 88 bytes). The offsets below were printed by
 * {@code offsetof} against that header; a library older than CUPTI 13 has other layouts, and
 * {@code CuptiActivity.start()} refuses it ({@link Cupti#FIRST_VERSION}). Only the fields read
 * are named. Hand-written, not jextract's: three structures, a dozen fields each, read in place.
 */
public final class ActivityRecords {

    private ActivityRecords() {
    }

    // enum CUpti_ActivityKind (cupti_activity.h:187-): the kinds read (199, 205, 214, 263).
    public static final int KIND_MEMCPY = 1;
    public static final int KIND_MEMSET = 2;
    public static final int KIND_KERNEL = 3;
    public static final int KIND_CONCURRENT_KERNEL = 10;

    /** The largest record read, for reinterpreting the pointer {@code cuptiActivityGetNextRecord} returns. */
    static final long MAX_RECORD_BYTES = 216;
    /** A kernel's name is a NUL-terminated string CUPTI owns while the buffer is being read. */
    private static final long MAX_NAME_BYTES = 64 * 1024;

    // Shared by all three: the kind first, then GPU start and end in ns at 16 and 24.
    static final long KIND = 0;
    static final long START = 16;
    static final long END = 24;

    // CUpti_ActivityKernel10
    static final long KERNEL_DEVICE = 40;
    static final long KERNEL_CONTEXT = 44;
    static final long KERNEL_STREAM = 48;
    static final long KERNEL_GRID_X = 52; // gridX, gridY, gridZ, blockX, blockY, blockZ: six int32 from here
    static final long KERNEL_CORRELATION = 92;
    static final long KERNEL_NAME = 104;
    static final long KERNEL_GRAPH_NODE = 144;
    static final long KERNEL_GRAPH = 156;

    // CUpti_ActivityMemcpy6 and CUpti_ActivityMemset4 agree up to the graph fields.
    static final long COPY_KIND = 4; // memcpy: uint8 copyKind; memset: uint32 value
    static final long BYTES = 8;
    static final long DEVICE = 32;
    static final long CONTEXT = 36;
    static final long STREAM = 40;
    static final long CORRELATION = 44;
    static final long GRAPH_NODE = 64;
    static final long GRAPH = 72;

    /** The record's kind. */
    public static int kind(MemorySegment record) {
        return record.get(JAVA_INT, KIND);
    }

    /** Commits the JFR event of a kernel record, when a recording enables it ({@code CUPTI_ACTIVITY_KIND_KERNEL} or {@code _CONCURRENT_KERNEL}). */
    static void commitKernel(MemorySegment r) {
        if (!GpuKernelEvent.PROBE.isEnabled()) {
            return;
        }
        GpuKernelEvent e = new GpuKernelEvent();
        e.gpuStart = r.get(JAVA_LONG, START);
        e.gpuEnd = r.get(JAVA_LONG, END);
        e.gpuDuration = e.gpuEnd - e.gpuStart;
        e.device = r.get(JAVA_INT, KERNEL_DEVICE);
        e.contextId = r.get(JAVA_INT, KERNEL_CONTEXT);
        e.streamId = r.get(JAVA_INT, KERNEL_STREAM);
        e.correlationId = r.get(JAVA_INT, KERNEL_CORRELATION);
        MemorySegment name = r.get(ADDRESS, KERNEL_NAME);
        // Safety: CUPTI's NUL-terminated name of the kernel, valid while the buffer is read.
        e.name = name.equals(MemorySegment.NULL) ? "" : name.reinterpret(MAX_NAME_BYTES).getString(0);
        e.grid = dim(r, KERNEL_GRID_X);
        e.block = dim(r, KERNEL_GRID_X + 12);
        e.graphId = Integer.toUnsignedLong(r.get(JAVA_INT, KERNEL_GRAPH));
        e.graphNodeId = r.get(JAVA_LONG, KERNEL_GRAPH_NODE);
        e.commit();
    }

    /** Commits the JFR event of a {@code CUPTI_ACTIVITY_KIND_MEMCPY} record. */
    static void commitMemcpy(MemorySegment r) {
        if (!GpuMemcpyEvent.PROBE.isEnabled()) {
            return;
        }
        GpuMemcpyEvent e = new GpuMemcpyEvent();
        e.gpuStart = r.get(JAVA_LONG, START);
        e.gpuEnd = r.get(JAVA_LONG, END);
        e.gpuDuration = e.gpuEnd - e.gpuStart;
        e.copyKind = copyKind(Byte.toUnsignedInt(r.get(JAVA_BYTE, COPY_KIND)));
        e.bytes = r.get(JAVA_LONG, BYTES);
        e.device = r.get(JAVA_INT, DEVICE);
        e.contextId = r.get(JAVA_INT, CONTEXT);
        e.streamId = r.get(JAVA_INT, STREAM);
        e.correlationId = r.get(JAVA_INT, CORRELATION);
        e.graphId = Integer.toUnsignedLong(r.get(JAVA_INT, GRAPH));
        e.graphNodeId = r.get(JAVA_LONG, GRAPH_NODE);
        e.commit();
    }

    /** Commits the JFR event of a {@code CUPTI_ACTIVITY_KIND_MEMSET} record. */
    static void commitMemset(MemorySegment r) {
        if (!GpuMemsetEvent.PROBE.isEnabled()) {
            return;
        }
        GpuMemsetEvent e = new GpuMemsetEvent();
        e.gpuStart = r.get(JAVA_LONG, START);
        e.gpuEnd = r.get(JAVA_LONG, END);
        e.gpuDuration = e.gpuEnd - e.gpuStart;
        e.value = r.get(JAVA_INT, COPY_KIND);
        e.bytes = r.get(JAVA_LONG, BYTES);
        e.device = r.get(JAVA_INT, DEVICE);
        e.contextId = r.get(JAVA_INT, CONTEXT);
        e.streamId = r.get(JAVA_INT, STREAM);
        e.correlationId = r.get(JAVA_INT, CORRELATION);
        e.graphId = Integer.toUnsignedLong(r.get(JAVA_INT, GRAPH));
        e.graphNodeId = r.get(JAVA_LONG, GRAPH_NODE);
        e.commit();
    }

    private static String dim(MemorySegment r, long offset) {
        return r.get(JAVA_INT, offset) + "x" + r.get(JAVA_INT, offset + 4) + "x" + r.get(JAVA_INT, offset + 8);
    }

    /** {@code CUpti_ActivityMemcpyKind} (cupti_activity.h:1121-1173), by name. */
    static String copyKind(int kind) {
        return switch (kind) {
            case 1 -> "HtoD";
            case 2 -> "DtoH";
            case 3 -> "HtoA";
            case 4 -> "AtoH";
            case 5 -> "AtoA";
            case 6 -> "AtoD";
            case 7 -> "DtoA";
            case 8 -> "DtoD";
            case 9 -> "HtoH";
            case 10 -> "PtoP";
            default -> "unknown (" + kind + ")";
        };
    }
}
