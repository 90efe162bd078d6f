package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.blas.Blas;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The C twin and the compare script agree with the rows and numbers of the Java twin. */
class TwinSourcesTest {

    private static final Path C = Path.of("src/c/twins.c");
    private static final Path SCRIPT = Path.of("src/bench/compare");

    @Test
    void theCTwinHasExactlyTheRowsThatClaimOne() throws IOException {
        Matcher m = Pattern.compile("\\{\"(\\w+)\", \\w+, \\w+, ([01])\\}").matcher(Files.readString(C));
        List<String> inC = m.results().map(r -> r.group(1) + (r.group(2).equals("1") ? " batched" : "")).toList();

        List<String> claimed = Arrays.stream(TwinRow.values()).filter(TwinRow::hasC)
                .map(r -> r.id() + (r.batched() ? " batched" : "")).toList();
        assertEquals(claimed, inC);
    }

    @Test
    void theCTwinUsesTheJavaTwinsNumbers() throws IOException {
        Map<String, Long> expected = Map.ofEntries(
                Map.entry("TwinRow.TRANSFER_BYTES", TwinRow.TRANSFER_BYTES),
                Map.entry("TwinRow.ALLOCATION_BYTES", TwinRow.ALLOCATION_BYTES),
                Map.entry("TwinRow.BATCH", (long) TwinRow.BATCH),
                Map.entry("TwinRow.FOUR_ELEMENTS", (long) TwinRow.FOUR_ELEMENTS),
                Map.entry("TwinRow.COPIES", (long) TwinRow.COPIES),
                Map.entry("TwinRow.COPY_BYTES", (long) TwinRow.COPY_BYTES),
                Map.entry("TwinRow.COPY_BUFFERS", (long) TwinRow.COPY_BUFFERS),
                Map.entry("TwinWorkload.READBACK_VALUE", (long) TwinWorkload.READBACK_VALUE),
                Map.entry("TwinWorkload.ROUND_TRIP_PATIENCE_NANOS", TwinWorkload.ROUND_TRIP_PATIENCE_NANOS),
                Map.entry("TwinWorkload.POLLS_PER_CLOCK_READ", (long) TwinWorkload.POLLS_PER_CLOCK_READ),
                Map.entry("TwinRow.GEMM_SIZE", (long) TwinRow.GEMM_SIZE),
                Map.entry("Blas.DEFAULT_WORKSPACE_BYTES", Blas.DEFAULT_WORKSPACE_BYTES),
                Map.entry("TwinWorkload.HALF_ONE", (long) TwinWorkload.HALF_ONE),
                Map.entry("TwinWorkload.HALF_NAN", (long) TwinWorkload.HALF_NAN),
                Map.entry("TwinWorkload.HALF_PRODUCT", (long) TwinWorkload.HALF_PRODUCT));
        Matcher m = Pattern.compile("#define \\w+ (\\d+)U?L?\\s+/\\* ([\\w.]+)").matcher(Files.readString(C));
        Map<String, Long> inC = new java.util.HashMap<>();
        m.results().forEach(r -> inC.put(r.group(2), Long.parseLong(r.group(1))));
        assertEquals(expected, inC);
    }

    @Test
    void theScriptRunsTheClassesThatExist() throws IOException {
        String script = Files.readString(SCRIPT);
        for (Class<?> main : List.of(Twin.class, CompareTable.class, AllocationRun.class)) {
            assertTrue(script.contains(main.getName()), main.getName() + " is not run by " + SCRIPT);
        }
    }
}
