package dev.gatun.cuda.examples;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.util.Arrays;

/**
 * A driver function Gatun does not wrap, called through the generated bindings on the handles
 * of Gatun's owners: {@code cuMemsetD32Async} on a Gatun stream and buffer, then read back with
 * Gatun. No simulated test: the raw call goes to the real driver.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp ... dev.gatun.cuda.examples.RawDriverCall</pre>
 */
public final class RawDriverCall {

    static final int ELEMENTS = 1 << 16;
    static final int POISON = 0x7FC00001;

    private RawDriverCall() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("RawDriverCall", RawDriverCall::run);
    }

    /** Sets every element to 42 with the raw call, on device 0 of {@code cuda}, and checks them all. */
    static boolean run(Cuda cuda) {
        CudaContext ctx = cuda.device(0).context();
        int n = ELEMENTS;
        int[] out = new int[n];
        // snippet:raw-driver-call
        try (Stream stream = ctx.createStream(); DeviceBuffer buffer = ctx.allocate(4L * n)) {
            stream.fill(buffer.asInts(), POISON);        // an element the raw memset misses keeps it
            // Safety: n ints lie inside the buffer, which stays open until the copy below has waited for the memset.
            int r = CudaDriver.cuMemsetD32Async(buffer.address(), 42, n, stream.handle());
            if (r != CudaDriver.CUDA_SUCCESS()) {
                throw new IllegalStateException("cuMemsetD32Async returned " + r);
            }
            buffer.asInts().copyTo(out);                 // ordered after the memset: handle() exported the stream
        }
        // end-snippet
        int[] expected = new int[n];
        Arrays.fill(expected, 42);
        ctx.close();
        return Arrays.equals(expected, out);
    }
}
