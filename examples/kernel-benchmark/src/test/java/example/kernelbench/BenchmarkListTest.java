package example.kernelbench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.runner.BenchmarkList;
import org.openjdk.jmh.runner.BenchmarkListEntry;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * JMH's annotation processor ran (javac 23 and newer run none found on the class path, so the
 * pom names it) and the forks it generated grant native access: without either, the jar would
 * have no benchmark to run, or every fork would warn and a future JDK would refuse it.
 */
class BenchmarkListTest {

    @Test
    void theGeneratedListHasBothBenchmarksWithTheNativeAccessFlagInTheirForks() {
        Map<String, BenchmarkListEntry> found = new TreeMap<>();
        for (BenchmarkListEntry entry : BenchmarkList.defaultList().find(OutputFormatFactory.createFormatInstance(
                System.out, VerboseMode.SILENT), List.of(SaxpyBenchmark.class.getName()), List.of())) {
            found.put(entry.getUsername(), entry);
        }
        String prefix = SaxpyBenchmark.class.getName() + ".";
        assertEquals(List.of(prefix + "gpuTime", prefix + "issue"), List.copyOf(found.keySet()));
        for (BenchmarkListEntry entry : found.values()) {
            assertEquals(List.of("--enable-native-access=ALL-UNNAMED"), List.copyOf(entry.getJvmArgsAppend().get()),
                    entry.getUsername());
        }
        assertEquals(SaxpyBenchmark.Drained.BATCH, found.get(prefix + "issue").getOperationsPerInvocation().get());
    }
}
