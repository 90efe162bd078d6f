package dev.gatun.cuda.graph;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;

/**
 * The validation latch's word on the GPU: 4 bytes of device memory of one context, cleared in
 * order on that context's compute stream (the stream validated work runs on by default), read
 * with a synchronous copy that waits for the work queued on every stream that used it.
 */
final class DeviceLatchWord implements LatchDeviceWord, AutoCloseable {

    private final DeviceBuffer word;
    private final Stream stream;
    private final int[] read = new int[1];

    DeviceLatchWord(CudaContext context) {
        this.word = context.allocate(4);
        this.stream = context.computeStream();
        stream.memset(word.bytes(), (byte) 0);
    }

    /** The word, for kernel arguments ({@code unsigned int*}). */
    DeviceView view() {
        return word.asInts();
    }

    @Override
    public void clearAsync() {
        stream.memset(word.bytes(), (byte) 0);
    }

    @Override
    public synchronized int readAndClear() {
        word.asInts().copyTo(read); // ordered after every queued use of the word
        clearAsync();
        return read[0];
    }

    @Override
    public void close() {
        word.close();
    }
}
