package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.testing.FakeNvrtcApi;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A JVM of {@link KernelCacheAcrossJvmsTest}: unpacks a header into a new temporary directory,
 * as each JVM unpacks Gatun's device headers, and compiles a source that includes it through the
 * default kernel cache (its directory set by the parent), with a simulated NVRTC. Prints what the
 * cache did and how often NVRTC compiled.
 *
 * <p>Arguments: the header's text.
 */
public final class KernelCacheChild {

    static final String HEADER = "gatun_child.cuh";
    static final String SOURCE = "#include \"" + HEADER + "\"\nextern \"C\" __global__ void k(float *o) { o[0] = VALUE; }\n";

    private KernelCacheChild() {
    }

    public static void main(String[] args) throws IOException {
        Path headers = Files.createTempDirectory("gatun-child-headers-");
        try {
            Files.writeString(headers.resolve(HEADER), args[0]);
            FakeNvrtcApi nvrtc = new FakeNvrtcApi();
            NvrtcCompiler compiler = NvrtcLibrary.create(nvrtc, "fake").compiler(KernelCache.defaultCache(),
                    NvrtcCompilerTest.TOOLKIT);
            compiler.compile(SOURCE, CompileOptions.builder(CompileTarget.ptx(9, 0)).includeDirectory(headers).build());
            KernelCacheCounters c = compiler.cache().counters();
            System.out.println("child headers=" + headers);
            System.out.println("child hits=" + c.hits() + " misses=" + c.misses() + " stores=" + c.stores()
                    + " compiles=" + nvrtc.compiles());
        } finally {
            Files.deleteIfExists(headers.resolve(HEADER));
            Files.delete(headers);
        }
    }
}
