package dev.gatun.cuda.testing;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The host threads inside driver calls on graph executables, as seen from in front of the
 * simulated driver. The driver does not synchronize a graph executable internally: a call that
 * changes one (an update, a node's new parameters, a destroy) must not overlap another call on
 * it from another thread, a launch included. The simulated driver runs each call atomically, so
 * calls overlap only when something in front of it holds a thread inside one: an
 * {@link Interposer} reports each call's whole span ({@link FakeDriverApi#hostCallBegins}), and
 * a call that overlaps a conflicting one on another thread is a violation. Without such a
 * report no overlap is ever seen, so plain tests never flag one by chance.
 *
 * <p>Concurrent launches of one executable are not flagged: the driver documents no guarantee
 * for them either, but Gatun's graph slots launch one executable from several threads by design
 * (see the report of the interleaving tests).
 */
final class SimulatedHostCalls {

    /** The functions that change an executable, first argument the executable. */
    private static final Set<String> CHANGES = Set.of("cuGraphExecUpdate_v2", "cuGraphExecKernelNodeSetParams_v2",
            "cuGraphExecEventRecordNodeSetEvent", "cuGraphExecEventWaitNodeSetEvent", "cuGraphNodeSetEnabled",
            "cuGraphExecDestroy");
    /** The functions that only use one, first argument the executable. */
    private static final Set<String> USES = Set.of("cuGraphLaunch", "cuGraphUpload");

    private record Call(Thread thread, String function, long exec) {
    }

    private final FakeDriverApi gpu;
    /** Guarded by {@code gpu}'s lock. */
    private final List<Call> inProgress = new ArrayList<>();

    SimulatedHostCalls(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    /** The executable a call of {@code function} names, or 0 when it names none. */
    private static long execOf(String function, Object[] args) {
        if ((CHANGES.contains(function) || USES.contains(function)) && args[0] instanceof MemorySegment exec) {
            return exec.address();
        }
        return 0;
    }

    void begins(String function, Object[] args) {
        long exec = execOf(function, args);
        if (exec != 0) {
            inProgress.add(new Call(Thread.currentThread(), function, exec));
        }
    }

    void ends(String function, Object[] args) {
        long exec = execOf(function, args);
        if (exec != 0) {
            inProgress.remove(new Call(Thread.currentThread(), function, exec));
        }
    }

    /** As the simulated driver runs {@code function}: a violation when it conflicts with another thread's call in progress. */
    void check(String function, Object[] args) {
        long exec = execOf(function, args);
        if (exec == 0) {
            return;
        }
        for (Call c : inProgress) {
            if (c.thread() != Thread.currentThread() && c.exec() == exec
                    && (CHANGES.contains(function) || CHANGES.contains(c.function()))) {
                gpu.violations.add(function + " of graph executable 0x" + Long.toHexString(exec) + " while thread '"
                        + c.thread().getName() + "' is inside " + c.function() + " of it (graph executables are not "
                        + "thread-safe)");
                return;
            }
        }
    }
}
