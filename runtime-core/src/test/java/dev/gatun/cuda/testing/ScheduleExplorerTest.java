package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The explorer on its own, with two threads that each read a counter, make a driver call and
 * write the counter back: it must find the lost update, explore a locked version without hanging
 * while one thread waits on the lock another holds inside a driver call, and report two steps
 * that deadlock each other.
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
