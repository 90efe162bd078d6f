package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 34: {@link CopyBatch#submit} refuses a batch two of whose copies overlap, on either path
 * and before any driver call, with an {@link IllegalArgumentException} naming both copies and the
 * bytes; the batch keeps its copies and nothing is queued. Every kind of overlap: two uploads
 * writing the same device bytes, two downloads writing the same pinned bytes, a copy reading
 * device or pinned bytes another copy writes, device copies writing each other's source.
 * Ranges that only touch, and copies that read the same bytes, are fine.
 */
class CopyBatchOverlapTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final DeviceBuffer device = ctx.allocate(1024);
    private final DeviceBuffer other = ctx.allocate(1024);
    private final PinnedBuffer pinned = ctx.allocatePinned(1024);
    private final PinnedBuffer pinnedOther = ctx.allocatePinned(1024);

    @AfterEach
    void close() {
        pinnedOther.close();
        pinned.close();
        other.close();
        device.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    private DeviceView deviceBytes(long offset, long length) {
        return device.bytes().slice(offset, length);
    }

    /** Submits {@code batch}, which must be refused with nothing queued and its copies kept; the message. */
    private String refused(CopyBatch batch) {
        int size = batch.size();
        sim.faults.countCalls();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> batch.submit(stream));
        assertEquals(0, sim.gpu.batchCopyCalls() + sim.gpu.singleCopyCalls(), "no copy reached the driver");
        assertEquals(0, sim.faults.calls("cuEventRecord"), "no pinned buffer was fenced");
        assertEquals(size, batch.size(), "the batch keeps its copies");
        assertTrue(e.getMessage().contains("The driver runs a batch's copies in no particular order"), e.getMessage());
        return e.getMessage();
    }

    @ParameterizedTest
    @EnumSource(CopyBatch.Submission.class)
    void twoUploadsIntoTheSameDeviceBytesAreRefusedOnEitherPath(CopyBatch.Submission submission) {
        try (CopyBatch batch = CopyBatch.create(8, submission)) {
            batch.upload(deviceBytes(0, 256), pinned, 0);
            batch.upload(deviceBytes(512, 64), pinned, 512);
            batch.upload(deviceBytes(200, 100), pinned, 256); // device bytes [200, 256) copy 0 writes too
            String m = refused(batch);
            long base = device.address();
            assertTrue(m.startsWith("copies 0 and 2 of this batch (numbered from 0 in the order added) overlap on device bytes [0x"
                    + Long.toHexString(base + 200) + ", 0x" + Long.toHexString(base + 256) + "): copy 0 (an upload from "
                    + pinned + " into " + device + ") writes them and copy 2 (an upload from " + pinned + " into " + device
                    + ") writes them."), m);
            batch.clear();
            assertEquals(0, batch.size());
        }
    }

    @Test
    void twoDownloadsIntoTheSamePinnedBytesAreRefused() {
        try (CopyBatch batch = CopyBatch.create(8)) {
            batch.download(pinned, 100, deviceBytes(0, 50));
            batch.download(pinned, 149, other.bytes().slice(0, 10)); // pinned byte 149, the last copy 0 writes
            String m = refused(batch);
            long base = pinned.segment().address();
            assertTrue(m.startsWith("copies 0 and 1 of this batch (numbered from 0 in the order added) overlap on pinned host "
                    + "bytes [0x" + Long.toHexString(base + 149) + ", 0x" + Long.toHexString(base + 150) + ")"), m);
            assertTrue(m.contains("(a download from " + other + " into " + pinned + ") writes them"), m);
        }
    }

    @Test
    void aDownloadOfDeviceBytesAnUploadOfTheBatchWritesIsRefused() {
        try (CopyBatch batch = CopyBatch.create(8)) {
            batch.download(pinnedOther, 0, deviceBytes(64, 64)); // reads device bytes [64, 128)
            batch.upload(deviceBytes(0, 100), pinned, 0); // writes device bytes [0, 100)
            String m = refused(batch);
            assertTrue(m.contains("copy 0 (a download from " + device + " into " + pinnedOther + ") reads them and copy 1 "
                    + "(an upload from " + pinned + " into " + device + ") writes them"), m);
        }
    }

    @Test
    void anUploadFromPinnedBytesADownloadOfTheBatchWritesIsRefused() {
        try (CopyBatch batch = CopyBatch.create(8)) {
            batch.upload(deviceBytes(0, 64), pinned, 32); // reads pinned bytes [32, 96)
            batch.download(pinned, 0, other.bytes().slice(0, 40)); // writes pinned bytes [0, 40)
            assertTrue(refused(batch).contains("overlap on pinned host bytes"));
        }
    }

    @Test
    void deviceCopiesThatWriteAnotherCopysSourceAreRefused() {
        try (CopyBatch batch = CopyBatch.create(8)) {
            batch.copy(other.bytes().slice(0, 128), deviceBytes(0, 128)); // reads device [0, 128)
            batch.copy(deviceBytes(120, 8), other.bytes().slice(512, 8)); // writes device [120, 128)
            String m = refused(batch);
            assertTrue(m.contains("copy 0 (a device copy from " + device + " into " + other + ") reads them and copy 1 (a "
                    + "device copy from " + other + " into " + device + ") writes them"), m);
        }
    }

    @Test
    void touchingRangesAndSharedSourcesAreAcceptedAndMoveTheRightBytes() {
        byte[] data = new byte[1024];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 7 + 3);
        }
        pinned.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
        try (CopyBatch batch = CopyBatch.create(8)) {
            batch.upload(deviceBytes(0, 128), pinned, 0);
            batch.upload(deviceBytes(128, 128), pinned, 0); // touches copy 0 on the device, reads the same pinned bytes
            batch.upload(deviceBytes(256, 256), pinned, 128); // touches copy 1
            batch.submit(stream);
            batch.download(pinnedOther, 0, deviceBytes(0, 256)); // two downloads reading the same device bytes
            batch.download(pinnedOther, 256, deviceBytes(0, 256));
            batch.download(pinnedOther, 512, deviceBytes(256, 256));
            batch.submit(stream);
        }
        byte[] back = pinnedOther.segment().asSlice(0, 768).toArray(ValueLayout.JAVA_BYTE);
        for (int i = 0; i < 768; i++) {
            int source = i < 128 ? i : i < 256 ? i - 128 : i < 384 ? i - 256 : i < 512 ? i - 384 : i - 512 + 128;
            assertEquals(data[source], back[i], "byte " + i);
        }
        assertEquals(2, sim.gpu.batchCopyCalls());
    }

    @Test
    void aRefusedBatchSubmitsOnceItsConflictIsCleared() {
        try (CopyBatch batch = CopyBatch.create(4)) {
            batch.upload(deviceBytes(0, 16), pinned, 0);
            batch.upload(deviceBytes(8, 16), pinned, 16);
            refused(batch);
            batch.clear();
            batch.upload(deviceBytes(0, 16), pinned, 0);
            batch.submit(stream);
            byte[] got = new byte[16];
            deviceBytes(0, 16).copyTo(got);
            assertArrayEquals(pinned.segment().asSlice(0, 16).toArray(ValueLayout.JAVA_BYTE), got);
        }
    }
}
