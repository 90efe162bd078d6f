package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Every driver function Gatun calls (DriverApi is generated from
 * cuda-bindings/jextract/driver.functions) is a decision: simulated by exactly one area of the
 * simulated driver, or named here as not simulated. Adding a function to the list without
 * deciding fails this test; two areas simulating one function fail every test that builds a
 * {@link FakeDriverApi}.
 */
class SimulatedDriverCoverageTest {

    /** Functions Gatun's CPU tests never reach; a call to one fails with UnsupportedOperationException. */
    private static final Set<String> NOT_SIMULATED = Set.of(); // no caller in Gatun yet

    private final FakeDriverApi gpu = new FakeDriverApi();

    @Test
    void everyDriverFunctionIsSimulatedOrListedAsNotSimulated() {
        Set<Method> simulated = new HashSet<>();
        gpu.areas().forEach(area -> simulated.addAll(SimulatedDriverApi.simulations(area.getClass()).keySet()));
        List<String> problems = new ArrayList<>();
        for (Method function : DriverApi.class.getMethods()) {
            boolean listed = NOT_SIMULATED.contains(function.getName());
            if (simulated.contains(function) == listed) {
                problems.add(function.getName() + (listed ? " is simulated but listed in NOT_SIMULATED"
                        : " is neither simulated nor listed in NOT_SIMULATED"));
            }
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void everyNotSimulatedNameIsADriverFunction() {
        Set<String> functions = new TreeSet<>();
        Arrays.stream(DriverApi.class.getMethods()).forEach(m -> functions.add(m.getName()));
        assertEquals(Set.of(), new TreeSet<>(NOT_SIMULATED.stream().filter(n -> !functions.contains(n)).toList()),
                "names in NOT_SIMULATED that driver.functions no longer lists");
    }

    /** A public area method the dispatcher never calls: a stale function or a wrong signature. */
    @Test
    void everyPublicAreaMethodSimulatesADriverFunction() {
        List<String> strays = new ArrayList<>();
        for (Object area : gpu.areas()) {
            for (Method m : area.getClass().getDeclaredMethods()) {
                boolean simulates = SimulatedDriverApi.simulations(area.getClass()).containsValue(m);
                if (Modifier.isPublic(m.getModifiers()) && !simulates) {
                    strays.add(area.getClass().getSimpleName() + "." + m.getName());
                }
            }
        }
        assertEquals(List.of(), strays, "not in DriverApi with this signature; remove, or fix the signature");
    }

    @Test
    void aFunctionNoAreaSimulatesFailsNamingItself() {
        DriverApi none = SimulatedDriverApi.over(new Object(), List.of(), SimulatedDriverApi.Hook.NONE);
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> none.cuInit(0));
        assertTrue(e.getMessage().contains("does not simulate cuInit"), e.getMessage());
    }

    /** So every test fails while two areas simulate one function, naming both (this class's {@code gpu} included). */
    @Test
    void twoAreasSimulatingOneFunctionAreRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SimulatedDriverApi.over(gpu,
                List.of(new SimulatedDevices(gpu), new SimulatedDevices(gpu)), SimulatedDriverApi.Hook.NONE));
        assertTrue(e.getMessage().contains("simulated by both SimulatedDevices and SimulatedDevices"), e.getMessage());
    }
}
