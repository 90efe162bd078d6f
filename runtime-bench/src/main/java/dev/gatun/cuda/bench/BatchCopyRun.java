package dev.gatun.cuda.bench;

import dev.gatun.cuda.CopyBatch;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import java.lang.foreign.ValueLayout;

/**
 * The batched-copy rows' operation (issue 24), as {@code twins.c} makes it: {@link TwinRow#COPIES}
 * chunks of {@link TwinRow#COPY_BYTES} between one of {@link TwinRow#COPY_BUFFERS} pinned buffers
 * (in turn; each batch follows the buffer's previous one in stream order, with no host wait) and
 * one device buffer, chunk k to chunk k, filled into a {@link CopyBatch} and submitted: one
 * {@code cuMemcpyBatchAsync}, or one {@code cuMemcpyAsync} each. Shared by the Java twin and
 * {@link BatchCopyBenchmark}.
 */
final class BatchCopyRun implements AutoCloseable {

    /** The byte the host side starts with; the device side starts with {@link #DEVICE_BYTE}. */
    static final byte HOST_BYTE = 7;
    static final byte DEVICE_BYTE = 11;

    private final Stream stream;
    private final boolean toDevice;
    private final PinnedBuffer[] pinned = new PinnedBuffer[TwinRow.COPY_BUFFERS];
    private final DeviceView[] chunks = new DeviceView[TwinRow.COPIES];
    private final DeviceBuffer device;
    private final CopyBatch batch;

    private BatchCopyRun(CudaContext context, Stream stream, boolean toDevice, CopyBatch.Submission submission) {
        this.stream = stream;
        this.toDevice = toDevice;
        long bytes = (long) TwinRow.COPIES * TwinRow.COPY_BYTES;
        this.batch = CopyBatch.create(TwinRow.COPIES, submission);
        this.device = context.allocate(bytes);
        for (int b = 0; b < pinned.length; b++) {
            pinned[b] = context.allocatePinned(bytes);
            pinned[b].segment().fill(HOST_BYTE);
        }
        for (int k = 0; k < chunks.length; k++) {
            chunks[k] = device.bytes().slice((long) k * TwinRow.COPY_BYTES, TwinRow.COPY_BYTES);
        }
        stream.memset(device.bytes(), DEVICE_BYTE);
        stream.synchronize();
    }

    /**
     * Sets up the buffers (on failure the context's close frees what was made).
     *
     * @param toDevice uploads, else downloads
     */
    static BatchCopyRun open(CudaContext context, Stream stream, boolean toDevice, CopyBatch.Submission submission) {
        return new BatchCopyRun(context, stream, toDevice, submission);
    }

    /** Operation {@code i}: the chunks of pinned buffer {@code i % COPY_BUFFERS}, as one batch. */
    void run(int i) {
        PinnedBuffer host = pinned[i % TwinRow.COPY_BUFFERS];
        CopyBatch b = batch;
        for (int k = 0; k < TwinRow.COPIES; k++) {
            long offset = (long) k * TwinRow.COPY_BYTES;
            if (toDevice) {
                b.upload(chunks[k], host, offset);
            } else {
                b.download(host, offset, chunks[k]);
            }
        }
        b.submit(stream);
    }

    /**
     * After a run and a stream sync: the bytes moved (the device holds the host's byte, or every
     * pinned buffer the device's), and the batch took one path throughout, the one asked for
     * where it was one at a time.
     *
     * @throws IllegalStateException when not
     */
    void verify(CopyBatch.Submission submission) {
        byte expected = toDevice ? HOST_BYTE : DEVICE_BYTE;
        if (toDevice) {
            byte[] got = new byte[(int) device.byteSize()];
            device.bytes().copyTo(got);
            check(got, expected, "the device buffer");
        } else {
            for (PinnedBuffer p : pinned) {
                check(p.segment().toArray(ValueLayout.JAVA_BYTE), expected, p.toString());
            }
        }
        long batched = batch.batchedSubmissions();
        long single = batch.oneAtATimeSubmissions();
        if ((batched > 0 && single > 0) || (submission == CopyBatch.Submission.ONE_AT_A_TIME && batched > 0)) {
            throw new IllegalStateException("the batch took " + batched + " batched and " + single
                    + " one-at-a-time submissions, asked for " + submission);
        }
    }

    private static void check(byte[] got, byte expected, String where) {
        for (int k = 0; k < got.length; k++) {
            if (got[k] != expected) {
                throw new IllegalStateException(where + " holds " + got[k] + " at byte " + k + ", not " + expected);
            }
        }
    }

    @Override
    public void close() {
        stream.synchronize();
        batch.close();
        for (PinnedBuffer p : pinned) {
            if (p != null) {
                p.close();
            }
        }
        device.close();
    }
}
