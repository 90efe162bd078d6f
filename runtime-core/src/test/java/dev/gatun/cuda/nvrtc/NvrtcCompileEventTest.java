package dev.gatun.cuda.nvrtc;

import static dev.gatun.cuda.testing.FlightRecording.named;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeNvrtcApi;
import dev.gatun.cuda.testing.FlightRecording;
import java.nio.file.Path;
import java.util.List;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** NVRTC compiles in Java Flight Recorder: a compile, a cache hit, a rejected program. */
class NvrtcCompileEventTest {

    @TempDir
    Path cacheDirectory;

    @Test
    void aCompileThenACacheHitThenARejectionAreRecorded() {
        NvrtcCompiler compiler = NvrtcLibrary.create(new FakeNvrtcApi(), "fake")
                .compiler(KernelCache.at(cacheDirectory), NvrtcCompilerTest.TOOLKIT);
        CompileOptions options = CompileOptions.builder(CompileTarget.ptx(9, 0)).programName("fill.cu").build();
        List<RecordedEvent> events = FlightRecording.of(() -> {
            compiler.compile(NvrtcCompilerTest.SOURCE, options);
            compiler.compile(NvrtcCompilerTest.SOURCE, options);
            assertThrows(CompilationException.class, () -> compiler.compile("#error broken\n", options));
        });
        List<RecordedEvent> compiles = named(events, "dev.gatun.NvrtcCompile");
        assertEquals(List.of(false, true, false), compiles.stream().map(e -> e.getBoolean("cacheHit")).toList());
        assertEquals(List.of(true, true, false), compiles.stream().map(e -> e.getBoolean("compiled")).toList());
        assertEquals("fill.cu", compiles.getFirst().getString("program"));
        assertEquals("PTX compute_90", compiles.getFirst().getString("target"));
        assertEquals(NvrtcCompilerTest.SOURCE.length(), compiles.getFirst().getLong("sourceLength"));
        assertTrue(compiles.getFirst().getLong("imageBytes") > 0);
        assertFalse(compiles.get(2).getLong("imageBytes") > 0);
    }
}
