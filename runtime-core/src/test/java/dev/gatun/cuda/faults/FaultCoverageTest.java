package dev.gatun.cuda.faults;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.faults.FaultWorld.Native;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.LogCapture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Fault coverage (issue 15, item 3): every driver function Gatun calls fails, in a CPU test,
 * before the call is made and after it was made (the uncertain case), and each failure ends in
 * a typed exception or a documented recovery, with no owner leaked and the context still usable,
 * or poisoned when the error is sticky (and then still closable). The rows are
 * {@link FaultTable}; a function added to driver.functions without a row fails the build.
 */
class FaultCoverageTest {

    /** How the call fails: not at all, before it is made, or after it was made. */
    enum Injection {
        NONE(null), BEFORE(FaultPlan.Mode.REPLACE), AFTER(FaultPlan.Mode.OVERRIDE);

        final FaultPlan.Mode mode;

        Injection(FaultPlan.Mode mode) {
            this.mode = mode;
        }
    }

    static Stream<Arguments> runs() {
        return FaultTable.CASES.stream()
                .flatMap(c -> Arrays.stream(Injection.values()).map(injection -> Arguments.of(c, injection)));
    }

    @ParameterizedTest(name = "{0} [{1}]")
    @MethodSource("runs")
    void aFailedDriverCallEndsTypedOrRecoveredAndLeaksNothing(FaultCase c, Injection injection) throws Throwable {
        FaultWorld w = new FaultWorld(c.devices(), c.driverVersion());
        Map<OwnerKind, Long> baseline = liveOwners(w.ctx);
        LogCapture.clear();
        Executable call = c.setUp().open(w);
        FaultPlan plan = w.sim.faults.countCalls();
        if (injection != Injection.NONE) {
            plan.inject(c.function(), c.error(), injection.mode, 0, c.times());
        }
        Throwable thrown = null;
        try {
            call.execute();
        } catch (Throwable t) {
            thrown = t;
        }
        int calls = plan.calls(c.function());
        int least = injection == Injection.NONE ? 1 : c.times();
        assertTrue(calls >= least, () -> "the scenario '" + c.scenario() + "' made " + calls + " call(s) of "
                + c.function() + ", not " + least + ": fix the scenario. Calls it made: " + plan.counts());

        Outcome expected = switch (injection) {
            case NONE -> c.withoutFault();
            case BEFORE -> c.before();
            case AFTER -> c.after();
        };
        assertThrown(c, expected, thrown);
        if (injection != Injection.NONE) {
            expected.check().accept(w, thrown);
        }
        plan.clear();

        assertEquals(expected.poisons(), w.ctx.diagnostics().poisonedBy().isPresent(),
                () -> "poisoned: " + w.ctx.diagnostics().poisonedBy() + ", expected " + expected.poisons());
        if (expected.poisons()) {
            assertEquals(c.error(), w.ctx.diagnostics().poisonedBy().orElseThrow().result());
            LogCapture.expectPoisonedBy(w.ctx.diagnostics().poisonedBy().orElseThrow());
            everyLaterCallFailsFast(w.ctx);
        }

        w.closeOpened();
        for (int i = 0; i < 3; i++) {
            w.ctx.reap(); // enough for every retry a failed free gets
        }
        assertEquals(baseline, liveOwners(w.ctx), "owners left open after closing what the scenario opened");
        assertEquals(0, w.ctx.diagnostics().counters().pendingRetirements(), () -> "retirements left: " + w.ctx.diagnostics().counters());
        if (!expected.poisons()) {
            w.roundTrip(w.ctx); // still usable
        }

        w.ctx.close();
        assertTrue(w.ctx.isClosed());
        assertEquals(liveOwners(null), liveOwners(w.ctx), "owners left after the context closed");
        if (!expected.poisons()) {
            assertEquals(driverObjects(expected.orphans()), w.driverObjects(),
                    "driver objects left after the context closed (beyond those the failed call made unseen)");
        }
        List<String> unsafe = w.sim.gpu.violations().stream()
                .filter(v -> expected.flagged().stream().noneMatch(v::startsWith)).toList();
        assertEquals(List.of(), unsafe, "unsafe frees on the simulated GPU");
    }

    private static void assertThrown(FaultCase c, Outcome expected, Throwable thrown) {
        if (expected.thrown() == null) {
            if (thrown != null) {
                fail(c + ": expected " + expected.recovery() + ", but it threw", thrown);
            }
            return;
        }
        if (thrown == null || thrown.getClass() != expected.thrown()) {
            fail(c + ": expected " + expected.thrown().getSimpleName() + ", got " + thrown, thrown);
        }
        if (thrown instanceof CudaException e) {
            int result = expected.result() == Outcome.INJECTED ? c.error() : expected.result();
            assertEquals(result, e.result(), () -> "the CUresult reported by " + e);
        }
    }

    /** After a sticky error, every call that needs the driver fails fast, naming the first error. */
    private static void everyLaterCallFailsFast(CudaContext ctx) {
        CudaException first = ctx.diagnostics().poisonedBy().orElseThrow();
        List<Executable> later = List.of(() -> ctx.allocate(64), ctx::createStream, ctx::createEvent,
                ctx::synchronize, ctx.diagnostics()::memoryInfo, () -> ctx.allocatePinned(64), () -> ctx.computeStream().query(),
                () -> ctx.modules().load("late", FaultWorld.IMAGE));
        for (Executable call : later) {
            ContextPoisonedException e = assertThrows(ContextPoisonedException.class, call);
            assertSame(first, e.firstError());
        }
    }

    /** Live owners per kind; all zero for a null context. */
    private static Map<OwnerKind, Long> liveOwners(CudaContext ctx) {
        Map<OwnerKind, Long> live = new EnumMap<>(OwnerKind.class);
        for (OwnerKind kind : OwnerKind.values()) {
            live.put(kind, ctx == null ? 0L : ctx.diagnostics().liveOwners(kind));
        }
        return live;
    }

    private static Map<Native, Integer> driverObjects(List<Native> orphans) {
        Map<Native, Integer> counts = new EnumMap<>(Native.class);
        for (Native n : Native.values()) {
            counts.put(n, 0);
        }
        orphans.forEach(n -> counts.merge(n, 1, Integer::sum));
        return counts;
    }

    // ---- the table against the list ----

    @Test
    void everyListedFunctionHasARowOrIsNamedNotCalled() {
        Set<String> listed = new TreeSet<>(DriverFunctions.listed());
        Set<String> rows = FaultTable.CASES.stream().map(FaultCase::function).collect(Collectors.toCollection(TreeSet::new));
        Set<String> missing = new TreeSet<>(listed);
        missing.removeAll(rows);
        missing.removeAll(FaultTable.NOT_CALLED);
        Set<String> stale = new TreeSet<>(rows);
        stale.addAll(FaultTable.NOT_CALLED);
        stale.removeAll(listed);
        Set<String> both = new TreeSet<>(rows);
        both.retainAll(FaultTable.NOT_CALLED);
        assertAll(
                () -> assertEquals(Set.of(), missing, "functions in driver.functions with no row in FaultTable.CASES: "
                        + "add a scenario that calls each, the error to inject, and what must follow before and after "
                        + "the call"),
                () -> assertEquals(Set.of(), stale, "rows or NOT_CALLED entries for functions driver.functions no "
                        + "longer lists"),
                () -> assertEquals(Set.of(), both, "functions with a row that NOT_CALLED also names"));
    }

    @Test
    void notCalledFunctionsHaveNoCallSiteAndCoveredOnesHaveOne() {
        Map<String, Integer> sites = DriverFunctions.layer2CallSites();
        Set<String> calledAnyway = new TreeSet<>(FaultTable.NOT_CALLED);
        calledAnyway.retainAll(sites.keySet());
        assertEquals(Set.of(), calledAnyway, "NOT_CALLED names functions layer 2 calls: give each a row instead");
        Set<String> rowsWithoutSite = FaultTable.CASES.stream().map(FaultCase::function)
                .filter(f -> !sites.containsKey(f)).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(Set.of(), rowsWithoutSite, "rows for functions layer 2 has no call site of");
        Set<String> unlisted = new TreeSet<>(sites.keySet());
        unlisted.removeAll(DriverFunctions.listed());
        assertEquals(Set.of(), unlisted, "layer 2 calls functions driver.functions does not list");
    }

    /** runtime-core/README.md's "Fault coverage" table states these figures; a change to the list or the code must update it. */
    @Test
    void theReadmeStatesTheCountedFigures() throws IOException {
        String readme = Files.readString(Path.of("README.md"));
        Map<String, Integer> sites = DriverFunctions.layer2CallSites();
        int callSites = sites.values().stream().mapToInt(Integer::intValue).sum();
        long covered = FaultTable.CASES.stream().map(FaultCase::function).distinct().count();
        assertEquals(DriverFunctions.listed().size(), figure(readme, "driver functions listed"));
        assertEquals(sites.size(), figure(readme, "driver functions called"));
        assertEquals(covered, figure(readme, "driver functions covered"));
        assertEquals(callSites, figure(readme, "call sites in layer 2"));
        assertTrue(readme.contains(DriverFunctions.typedCallSites() + " written `c.api.cu…(`"),
                "the README splits the call sites as counted: " + DriverFunctions.typedCallSites() + " typed");
        assertTrue(readme.contains(FaultTable.CASES.size() + " rows, " + 3 * FaultTable.CASES.size() + " runs"),
                "the README counts the rows: " + FaultTable.CASES.size());
    }

    private static long figure(String readme, String label) {
        Matcher m = Pattern.compile("\\| " + Pattern.quote(label) + " \\| (\\d+) \\|").matcher(readme);
        assertTrue(m.find(), "runtime-core/README.md has no row '| " + label + " | n |' in its Fault coverage table");
        return Long.parseLong(m.group(1));
    }

    @Test
    void layer2IsTheOnlyCodeThatCallsTheDriver() {
        assertEquals(Map.of(), DriverFunctions.callsOutsideLayer2(),
                "driver calls outside internal/driver bypass the choke point where faults are injected");
    }
}
