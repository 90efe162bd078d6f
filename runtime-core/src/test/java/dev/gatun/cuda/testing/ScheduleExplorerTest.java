package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.SwitchPoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The explorer on its own, with two threads that each read a counter, make a driver call and
 * write the counter back: it must find the lost update, explore a locked version without hanging
 * while one thread waits on the lock another holds inside a driver call, and report two steps
 * that deadlock each other. And with no driver call at all between the read and the write, only
 * a {@link SwitchPoint}: the explorer finds that lost update too, and misses it when told to
 * switch at driver calls alone (which is all it could do before switch points).
 */
class ScheduleExplorerTest {

    /** Two steps that each add one to {@code counter} across a driver call, inside {@code lockOrNull} when given. */
    private static ScheduleExplorer.Run counter(Interposer interposer, int[] counter, Object lockOrNull) {
        MemorySegment out = Arena.ofAuto().allocate(4);
        Background.Step increment = () -> {
            if (lockOrNull == null) {
                incrementAcrossACall(interposer, counter, out);
            } else {
                synchronized (lockOrNull) {
                    incrementAcrossACall(interposer, counter, out);
                }
            }
        };
        return ScheduleExplorer.Run.of(interposer,
                List.of(new ScheduleExplorer.Step("T1", increment), new ScheduleExplorer.Step("T2", increment)),
                failures -> assertEquals(2, counter[0], "an increment was lost"), () -> {
                });
    }

    private static void incrementAcrossACall(Interposer interposer, int[] counter, MemorySegment out) {
        int seen = counter[0];
        assertEquals(0, interposer.api().cuDeviceGetCount(out));
        counter[0] = seen + 1;
    }

    @Test
    void findsAnUpdateLostBetweenTwoDriverCalls() {
        AssertionError e = assertThrows(AssertionError.class, () -> ScheduleExplorer.of("racy counter")
                .explore(() -> counter(Interposer.over(new FakeDriverApi()), new int[1], null)));
        assertTrue(e.getMessage().startsWith("racy counter: schedule "), e.getMessage());
        assertTrue(e.getMessage().contains("an increment was lost"), e.getMessage());
    }

    /** Two steps that each add one to {@code counter}, reading and writing it around a switch point and no driver call. */
    private static ScheduleExplorer.Run javaOnlyCounter(Interposer interposer, int[] counter) {
        Background.Step increment = () -> {
            int seen = counter[0];
            SwitchPoint.LEDGER.reach(); // stands for a protocol step between the read and the write
            counter[0] = seen + 1;
        };
        return ScheduleExplorer.Run.of(interposer,
                List.of(new ScheduleExplorer.Step("T1", increment), new ScheduleExplorer.Step("T2", increment)),
                failures -> assertEquals(2, counter[0], "an increment was lost"), () -> {
                });
    }

    @Test
    void findsAnUpdateLostBetweenTwoJavaStepsWithNoDriverCallBetween() {
        Interposer interposer = Interposer.over(new FakeDriverApi());
        AssertionError e = assertThrows(AssertionError.class, () -> ScheduleExplorer.of("racy counter, Java only")
                .explore(() -> javaOnlyCounter(interposer, new int[1])));
        assertTrue(e.getMessage().contains("an increment was lost"), e.getMessage());
        assertTrue(e.getMessage().contains(Interposer.label(SwitchPoint.LEDGER)), "the order names the switch point: "
                + e.getMessage());
    }

    @Test
    void missesThatUpdateWhenSwitchingAtDriverCallsAlone() {
        Interposer interposer = Interposer.over(new FakeDriverApi());
        ScheduleExplorer.Report report = ScheduleExplorer.of("racy counter, driver calls only")
                .switchingAt(EnumSet.noneOf(SwitchPoint.class))
                .explore(() -> javaOnlyCounter(interposer, new int[1]));
        assertTrue(report.exhausted(), report.toString());
        assertEquals(2, report.schedules(), "only the two start orders, each step run whole: " + report);
    }

    @Test
    void exploresALockedVersionWithoutHangingOnTheLock() {
        ScheduleExplorer.Report report = ScheduleExplorer.of("locked counter")
                .explore(() -> counter(Interposer.over(new FakeDriverApi()), new int[1], new Object()));
        assertTrue(report.exhausted(), report.toString());
        assertTrue(report.schedules() >= 2, "both start orders: " + report);
    }

    @Test
    void reportsStepsThatDeadlockEachOther() {
        AssertionError e = assertThrows(AssertionError.class, () -> ScheduleExplorer.of("lock order").explore(() -> {
            Interposer interposer = Interposer.over(new FakeDriverApi());
            MemorySegment out = Arena.ofAuto().allocate(4);
            Object a = new Object();
            Object b = new Object();
            return ScheduleExplorer.Run.of(interposer,
                    List.of(new ScheduleExplorer.Step("T1", () -> nested(interposer, out, a, b)),
                            new ScheduleExplorer.Step("T2", () -> nested(interposer, out, b, a))),
                    failures -> {
                    }, () -> {
                    });
        }));
        assertTrue(e.getMessage().contains("deadlock"), e.getMessage());
    }

    /** Takes {@code first}, then {@code second}, with a driver call inside each. */
    private static void nested(Interposer interposer, MemorySegment out, Object first, Object second) {
        synchronized (first) {
            interposer.api().cuDeviceGetCount(out);
            synchronized (second) {
                interposer.api().cuDeviceGetCount(out);
            }
        }
    }
}
