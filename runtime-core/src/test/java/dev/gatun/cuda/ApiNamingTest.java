package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ApiNaming.Type;
import dev.gatun.cuda.ApiNaming.Violation;
import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The public API keeps one naming (issue 35 §3; the rules are {@code dev.gatun.cuda}'s package
 * comment, "One naming"): every name of gatun-core's and gatun-graph's API listings, which the
 * build checks against the jars it makes, follows them. The count of names that break a rule is
 * 0. Each rule is shown to fire on a planted listing with the names this API had on 9e28154.
 */
class ApiNamingTest {

    /** Surefire runs in the module's folder; the listings are the repository's. */
    private static final List<Path> LISTINGS = List.of(Path.of("..", "api", "gatun-core.api"),
            Path.of("..", "api", "gatun-graph.api"));

    /** A record's components by reflection, where the record is on this module's class path (gatun-core's are). */
    private static Optional<Set<String>> components(Type t) {
        try {
            RecordComponent[] components = Class.forName(t.name(), false, ApiNamingTest.class.getClassLoader())
                    .getRecordComponents();
            return components == null ? Optional.empty() // a listing older than the class: verify reports it
                    : Optional.of(Arrays.stream(components).map(RecordComponent::getName).collect(Collectors.toSet()));
        } catch (ClassNotFoundException e) {
            return Optional.empty(); // gatun-graph's: every accessor counts as a component
        }
    }

    @Test
    void noPublicNameBreaksTheNamingRules() throws IOException {
        List<Violation> violations = new ArrayList<>();
        int types = 0;
        for (Path listing : LISTINGS) {
            List<Type> parsed = ApiNaming.parse(Files.readString(listing));
            assertFalse(parsed.isEmpty(), "no type read from " + listing.toAbsolutePath());
            types += parsed.size();
            violations.addAll(ApiNaming.check(parsed, ApiNamingTest::components));
        }
        System.out.println("API-NAMING " + types + " public types read, " + violations.size() + " names break a rule");
        assertEquals(List.of(), violations, violations.size() + " public names break the naming rules of "
                + "dev.gatun.cuda's package comment; rename them (the listing is rewritten by "
                + "./mvnw -B -q verify -DskipTests -Dgatun.api.update)");
    }

    @Test
    void theListingsAreReadWholeWithTheirRecordsAndMembers() throws IOException {
        Map<String, Type> core = new TreeMap<>();
        ApiNaming.parse(Files.readString(LISTINGS.get(0))).forEach(t -> core.put(t.name(), t));
        assertTrue(core.get("dev.gatun.cuda.ContextCounters").isRecord());
        assertTrue(core.get("dev.gatun.cuda.DeviceAttribute").isEnum());
        assertTrue(core.get("dev.gatun.cuda.Kernel$Parameter").isRecord(), "nested types are read too");
        assertTrue(core.get("dev.gatun.cuda.CudaContext").members().stream()
                .anyMatch(m -> m.name().equals("diagnostics") && m.returns().equals("dev.gatun.cuda.ContextDiagnostics")));
        assertTrue(core.get("dev.gatun.cuda.Device").members().stream()
                .anyMatch(m -> m.name().equals("attribute") && m.parameters().equals(List.of("dev.gatun.cuda.DeviceAttribute"))));
    }

    /**
     * A listing with the names this API had on 9e28154 (and a few made up to reach every rule):
     * each is reported, with the rule it breaks, and the names that follow the rules are not.
     */
    @Test
    void eachRuleFiresOnTheNamesOf9e28154() {
        String planted = """
                public final class dev.gatun.cuda.DeviceView {
                  public long byteLength();
                  public long byteSize();
                }

                public final class dev.gatun.cuda.GrowableBuffer {
                  public long size();
                }

                public final class dev.gatun.cuda.ModuleImage {
                  public int byteSize();
                }

                public final class dev.gatun.cuda.nvrtc.CompiledProgram {
                  public int imageSize();
                }

                public final class dev.gatun.cuda.CopyBatch {
                  public int size();
                }

                public final class dev.gatun.cuda.MemoryPoolCounters extends java.lang.Record {
                  public dev.gatun.cuda.MemoryPoolCounters(long, long, long);
                  public long allocations();
                  public long bytesLive();
                }

                public final class dev.gatun.cuda.MemoryPoolUsage extends java.lang.Record {
                  public dev.gatun.cuda.MemoryPoolUsage(long, long, long, long);
                  public long reservedCurrent();
                  public long reservedHigh();
                  public long peakUsedBytes();
                }

                public final class dev.gatun.cuda.GrowableBufferCounters extends java.lang.Record {
                  public long mappedHighWaterBytes();
                }

                public final class dev.gatun.cuda.GraphAllocationCounters extends java.lang.Record {
                  public long live();
                  public long liveBytes();
                }

                public final class dev.gatun.cuda.graph.GraphCounts extends java.lang.Record {
                  public long replays();
                }

                public final class dev.gatun.cuda.graph.GraphSlot {
                  public dev.gatun.cuda.graph.GraphCounts counts();
                  public dev.gatun.cuda.graph.GraphCounters counters();
                  public boolean reset();
                }

                public final class dev.gatun.cuda.CudaContext {
                  public boolean peerAccessEnabled(dev.gatun.cuda.CudaContext);
                  public boolean isGreen();
                  public dev.gatun.cuda.ContextDiagnostics diagnostics();
                }

                public final class dev.gatun.cuda.ModuleRegistry {
                  public boolean ptxRejected();
                  public boolean unload(java.lang.String);
                }

                public final class dev.gatun.cuda.Device {
                  public int attribute(int);
                  public int attribute(dev.gatun.cuda.DeviceAttribute);
                }

                public final class dev.gatun.cuda.Kernel {
                  public void setAttribute(int, int);
                  public void setAttribute(dev.gatun.cuda.KernelAttribute, int);
                }

                public final class dev.gatun.cuda.PinnedBuffer {
                  public java.lang.String transferState();
                  public dev.gatun.cuda.TransferState transferState();
                }

                public final class dev.gatun.cuda.MemoryPool {
                  public void resetHighWater();
                  public void resetPeaks();
                }

                public final class dev.gatun.cuda.LaunchConfig extends java.lang.Record {
                  public dev.gatun.cuda.LaunchConfig withSharedMemory(int);
                  public dev.gatun.cuda.LaunchConfig withSharedMemoryBytes(int);
                  public int sharedMemoryBytes();
                  public boolean cooperative();
                }

                public final class dev.gatun.cuda.CudaException extends dev.gatun.cuda.GatunException {
                  public int result();
                }
                """;
        List<Violation> found = ApiNaming.check(ApiNaming.parse(planted), t -> Optional.empty());
        Map<String, List<String>> byMember = new TreeMap<>();
        found.forEach(v -> byMember.computeIfAbsent(v.type() + "." + v.member(), k -> new ArrayList<>()).add(v.rule()));
        List<String> expected = List.of(
                "dev.gatun.cuda.CudaContext.peerAccessEnabled(dev.gatun.cuda.CudaContext)",
                "dev.gatun.cuda.Device.attribute(int)",
                "dev.gatun.cuda.DeviceView.byteLength()",
                "dev.gatun.cuda.GraphAllocationCounters.live()",
                "dev.gatun.cuda.GrowableBuffer.size()",
                "dev.gatun.cuda.GrowableBufferCounters.mappedHighWaterBytes()",
                "dev.gatun.cuda.Kernel.setAttribute(int, int)",
                "dev.gatun.cuda.LaunchConfig.withSharedMemory(int)",
                "dev.gatun.cuda.MemoryPool.resetHighWater()",
                "dev.gatun.cuda.MemoryPoolCounters.bytesLive()",
                "dev.gatun.cuda.MemoryPoolUsage.reservedCurrent()",
                "dev.gatun.cuda.MemoryPoolUsage.reservedHigh()",
                "dev.gatun.cuda.ModuleImage.byteSize()",
                "dev.gatun.cuda.ModuleRegistry.ptxRejected()",
                "dev.gatun.cuda.PinnedBuffer.transferState()",
                "dev.gatun.cuda.graph.GraphCounts.(type)",
                "dev.gatun.cuda.graph.GraphSlot.counts()",
                "dev.gatun.cuda.nvrtc.CompiledProgram.imageSize()");
        assertEquals(expected, List.copyOf(byMember.keySet()), () -> "reported: " + found);
        assertEquals(18, byMember.size());
        assertTrue(byMember.get("dev.gatun.cuda.PinnedBuffer.transferState()").getFirst().contains("enum, not a String"));
        assertTrue(byMember.get("dev.gatun.cuda.Device.attribute(int)").getFirst().contains("enum that carries"));
        assertTrue(byMember.get("dev.gatun.cuda.MemoryPoolUsage.reservedCurrent()").stream()
                .anyMatch(r -> r.contains("peakX")));
    }
}
