package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        Map<String, Long> expected = Map.of(
                "TwinRow.TRANSFER_BYTES", TwinRow.TRANSFER_BYTES,
                "TwinRow.ALLOCATION_BYTES", TwinRow.ALLOCATION_BYTES,
                "TwinRow.BATCH", (long) TwinRow.BATCH,
                "TwinRow.FOUR_ELEMENTS", (long) TwinRow.FOUR_ELEMENTS,
                "TwinRow.COPIES", (long) TwinRow.COPIES,
                "TwinRow.COPY_BYTES", (long) TwinRow.COPY_BYTES,
                "TwinRow.COPY_BUFFERS", (long) TwinRow.COPY_BUFFERS,
                "TwinWorkload.READBACK_VALUE", (long) TwinWorkload.READBACK_VALUE,
                "TwinWorkload.ROUND_TRIP_PATIENCE_NANOS", TwinWorkload.ROUND_TRIP_PATIENCE_NANOS,
                "TwinWorkload.POLLS_PER_CLOCK_READ", (long) TwinWorkload.POLLS_PER_CLOCK_READ);
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
