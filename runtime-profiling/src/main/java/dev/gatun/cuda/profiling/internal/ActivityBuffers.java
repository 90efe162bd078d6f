package dev.gatun.cuda.profiling.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The buffers CUPTI fills with activity records, and the two callbacks of
 * {@code cuptiActivityRegisterCallbacks} as upcall stubs.
 *
 * <p>CUPTI asks for a buffer ({@code CUpti_BuffersCallbackRequestFunc}) on whatever thread
 * needs one, which may be a thread submitting work: the answer never waits. It is a buffer from
 * the free queue (lock-free), or, when every buffer is in CUPTI's hands, a new one; so there are
 * never more buffers than CUPTI held at once, and each is reused for the life of the process
 * (global arena: CUPTI may hold one across a stop and a start). CUPTI hands a full buffer back
 * ({@code CUpti_BuffersCallbackCompleteFunc}) on its own thread, or on the thread of a flush:
 * its records become JFR events there, and the buffer goes back on the free queue.
 *
 * <p>An upcall must never throw (the JVM would end): each catches everything, logs it and
 * answers as CUPTI allows (no buffer: a size of 0, and CUPTI drops records).
 */
public final class ActivityBuffers {

    private static final Logger LOG = LoggerFactory.getLogger(ActivityBuffers.class);

    /** One buffer: some thousands of records; CUPTI's samples use 8 MiB, but most programs need far less. */
    public static final long BUFFER_BYTES = 1 << 20;
    /** {@code ACTIVITY_RECORD_ALIGNMENT} (cupti_activity.h). */
    private static final long ALIGNMENT = 8;

    private final ConcurrentLinkedQueue<MemorySegment> free = new ConcurrentLinkedQueue<>();
    private final LongAdder buffers = new LongAdder();
    private final LongAdder kernels = new LongAdder();
    private final LongAdder copies = new LongAdder();
    private final LongAdder memsets = new LongAdder();
    private final LongAdder others = new LongAdder();
    private final MemorySegment requested;
    private final MemorySegment completed;

    public ActivityBuffers() {
        Linker linker = Linker.nativeLinker();
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            // Safety: the descriptors are CUpti_BuffersCallbackRequestFunc (uint8_t**, size_t*,
            // size_t*) and CUpti_BuffersCallbackCompleteFunc (CUcontext, uint32_t, uint8_t*,
            // size_t, size_t) of cupti_activity.h:7609 and 7641; the stubs live for the process,
            // as CUPTI keeps them registered.
            this.requested = linker.upcallStub(lookup.findVirtual(ActivityBuffers.class, "requested",
                    MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class, MemorySegment.class))
                    .bindTo(this), FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS), Arena.global());
            this.completed = linker.upcallStub(lookup.findVirtual(ActivityBuffers.class, "completed",
                    MethodType.methodType(void.class, MemorySegment.class, int.class, MemorySegment.class, long.class,
                            long.class)).bindTo(this),
                    FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    public MemorySegment requestedStub() {
        return requested;
    }

    public MemorySegment completedStub() {
        return completed;
    }

    private void requested(MemorySegment bufferOut, MemorySegment sizeOut, MemorySegment maxRecordsOut) {
        try {
            MemorySegment buffer = free.poll();
            if (buffer == null) {
                buffer = Arena.global().allocate(BUFFER_BYTES, ALIGNMENT);
                buffers.increment();
            }
            // Safety: CUPTI passes where to write the buffer's address, its size and the most
            // records it may hold (0: as many as fit).
            bufferOut.reinterpret(ADDRESS.byteSize()).set(ADDRESS, 0, buffer);
            sizeOut.reinterpret(JAVA_LONG.byteSize()).set(JAVA_LONG, 0, BUFFER_BYTES);
            maxRecordsOut.reinterpret(JAVA_LONG.byteSize()).set(JAVA_LONG, 0, 0L);
        } catch (Throwable t) {
            LOG.error("Could not give CUPTI an activity buffer; it drops records until it gets one", t);
            sizeOut.reinterpret(JAVA_LONG.byteSize()).set(JAVA_LONG, 0, 0L);
        }
    }

    private void completed(MemorySegment context, int streamId, MemorySegment buffer, long size, long validSize) {
        if (buffer.equals(MemorySegment.NULL)) {
            return;
        }
        // Safety: one of the buffers handed out above (BUFFER_BYTES, global arena); CUPTI wrote
        // validSize bytes of records into it and hands it back for good.
        MemorySegment records = buffer.reinterpret(BUFFER_BYTES);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cursor = arena.allocate(ADDRESS); // NULL: start at the first record
            while (true) {
                int r = Cupti.nextRecord(records, validSize, cursor);
                if (r != Cupti.SUCCESS) {
                    if (r != Cupti.MAX_LIMIT_REACHED) {
                        LOG.warn("cuptiActivityGetNextRecord returned {}; the rest of this buffer is skipped", r);
                    }
                    break;
                }
                // Safety: CUPTI's pointer to a whole record inside the buffer.
                commit(cursor.get(ADDRESS, 0).reinterpret(ActivityRecords.MAX_RECORD_BYTES));
            }
        } catch (Throwable t) {
            LOG.error("Reading a CUPTI activity buffer failed; its records are lost", t);
        } finally {
            free.offer(records);
        }
    }

    private void commit(MemorySegment record) {
        switch (ActivityRecords.kind(record)) {
            case ActivityRecords.KIND_KERNEL, ActivityRecords.KIND_CONCURRENT_KERNEL -> {
                kernels.increment();
                ActivityRecords.commitKernel(record);
            }
            case ActivityRecords.KIND_MEMCPY -> {
                copies.increment();
                ActivityRecords.commitMemcpy(record);
            }
            case ActivityRecords.KIND_MEMSET -> {
                memsets.increment();
                ActivityRecords.commitMemset(record);
            }
            default -> others.increment();
        }
    }

    /** Buffers allocated so far (each reused after). */
    public long buffers() {
        return buffers.sum();
    }

    public long kernels() {
        return kernels.sum();
    }

    public long copies() {
        return copies.sum();
    }

    public long memsets() {
        return memsets.sum();
    }
}
