package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaVersion;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link DriverFeature}, the table the code checks, is sound, and gatun-core's README shows it as
 * it is: the README's table is rendered from the enum here, so neither can change alone.
 */
class DriverFeatureTableTest {

    static final String BEGIN = "<!-- DriverFeature table: DriverFeatureTableTest renders it from "
            + "internal/driver/DriverFeature; change the enum, then paste what the test prints -->";
    static final String END = "<!-- end of the DriverFeature table -->";

    @Test
    void everyDriverFunctionServesExactlyOneFeature() {
        Map<DriverFunction, List<DriverFeature>> served = new EnumMap<>(DriverFunction.class);
        for (DriverFeature feature : DriverFeature.values()) {
            for (DriverFunction f : feature.entryPoints()) {
                served.computeIfAbsent(f, k -> new ArrayList<>()).add(feature);
            }
        }
        List<String> wrong = new ArrayList<>();
        for (DriverFunction f : DriverFunction.values()) {
            List<DriverFeature> features = served.getOrDefault(f, List.of());
            if (features.size() != 1) {
                wrong.add(f + " serves " + features);
            } else if (DriverFeature.of(f) != features.getFirst()) {
                wrong.add(f + ": DriverFeature.of says " + DriverFeature.of(f));
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void aFeatureNeedsWhatItsFunctionsNeedAndNoMoreUnlessItSaysWhat() {
        List<String> wrong = new ArrayList<>();
        for (DriverFeature feature : DriverFeature.values()) {
            int newest = feature.entryPoints().stream().mapToInt(DriverFunction::version).max().orElse(0);
            int needs = Math.max(newest, Driver.MINIMUM_VERSION);
            if (feature.minimum() < needs) {
                wrong.add(feature + " needs " + feature.minimum() + " but one of its functions " + newest);
            }
            if (feature.minimum() > needs && feature.need() == null) {
                wrong.add(feature + " needs " + feature.minimum() + ", more than its functions, and does not say why");
            }
            if (feature.minimum() == Driver.MINIMUM_VERSION && (feature.fallback() != null || feature.need() != null)) {
                wrong.add(feature + " works on every driver Gatun accepts: no fallback, nothing else needed");
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void theReadmeShowsTheTable() throws IOException {
        String readme = Files.readString(Path.of("README.md"));
        int begin = readme.indexOf(BEGIN);
        int end = readme.indexOf(END);
        assertTrue(begin >= 0 && end > begin, "runtime-core/README.md has no " + BEGIN + " ... " + END);
        String shown = readme.substring(begin + BEGIN.length(), end).strip();
        String table = table();
        assertEquals(table, shown, () -> "runtime-core/README.md's table of the driver each feature needs differs "
                + "from DriverFeature; replace it with:\n" + table + "\n");
    }

    /** The README's table: one row per feature, in the enum's order. */
    static String table() {
        StringBuilder sb = new StringBuilder();
        sb.append("| feature | where | needs a driver for CUDA | because of | on an older driver |\n");
        sb.append("| --- | --- | --- | --- | --- |\n");
        for (DriverFeature feature : DriverFeature.values()) {
            List<String> because = new ArrayList<>();
            for (DriverFunction f : feature.entryPoints()) {
                if (f.version() > Driver.MINIMUM_VERSION) {
                    because.add("`" + f + "` " + CudaVersion.of(f.version()));
                }
            }
            if (feature.need() != null) {
                because.add("`" + feature.need() + "` " + CudaVersion.of(feature.minimum()));
            }
            boolean baseline = feature.minimum() == Driver.MINIMUM_VERSION;
            String older = baseline ? "Gatun refuses the driver"
                    : feature.fallback() != null ? feature.fallback() : "`DriverTooOldException`";
            sb.append("| ").append(feature.title()).append(" | ").append(feature.api()).append(" | ")
                    .append(CudaVersion.of(feature.minimum())).append(" | ")
                    .append(because.isEmpty() ? "—" : String.join(", ", because)).append(" | ").append(older)
                    .append(" |\n");
        }
        return sb.toString().strip();
    }
}
