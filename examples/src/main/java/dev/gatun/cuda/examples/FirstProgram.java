package dev.gatun.cuda.examples;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Stream;
import java.util.Arrays;

/**
 * The smallest Gatun program: open device 0's context, copy an array to the GPU, zero part of
 * it there, copy it back and check it.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp ... dev.gatun.cuda.examples.FirstProgram</pre>
 */
public final class FirstProgram {

    static final int ELEMENTS = 1 << 16;
    /** The memset clears this many leading elements on the GPU. */
    static final int ZEROED = 1000;

    private FirstProgram() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("FirstProgram", FirstProgram::run);
    }

    /** Runs the round trip on device 0 of {@code cuda} and reports whether the bytes came back as expected. */
    static boolean run(Cuda cuda) {
        float[] host = new float[ELEMENTS];
        for (int i = 0; i < host.length; i++) {
            host[i] = 1.5f * i + 1; // never zero, so a cleared element cannot pass for an untouched one
        }
        // snippet:first-program
        CudaContext ctx = cuda.device(0).context();      // cuda = Cuda.system(); the primary context, retained once
        float[] back = new float[host.length];
        Arrays.fill(back, Float.NaN);                    // an element the copy misses shows as NaN
        try (DeviceBuffer buf = ctx.allocate(4L * host.length)) {
            buf.asFloats().copyFrom(host);               // host -> device: synchronous, ordered after queued work
            Stream s = ctx.computeStream();
            s.memset(buf.asFloats().slice(0, ZEROED), (byte) 0);   // asynchronous: 0.0f is all zero bytes
            buf.asFloats().copyTo(back);                 // device -> host: waits for the memset
        }                                                // freed once the stream's work is done
        ctx.close();                                     // refused while an owner made from it is still open
        // end-snippet
        float[] expected = host.clone();
        Arrays.fill(expected, 0, ZEROED, 0f);
        return Arrays.equals(expected, back);
    }
}
