package dev.gatun.cuda.internal.pool;

import dev.gatun.cuda.DevicePoolSite;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * Device pool acquisitions per call site. Only consulted while profiling is on: each record
 * walks the stack and looks its site up, which is why the pool skips it entirely when off.
 */
final class SiteProfile {

    private static final class Counts {
        final LongAdder acquires = new LongAdder();
        final LongAdder hits = new LongAdder();
        final LongAdder misses = new LongAdder();
        final LongAdder bytes = new LongAdder();
    }

    private final Supplier<StackTraceElement> locator;
    private final Map<StackTraceElement, Counts> sites = new ConcurrentHashMap<>();

    /** @param locator names the site of the current acquisition ({@link CallSites} outside tests) */
    SiteProfile(Supplier<StackTraceElement> locator) {
        this.locator = locator;
    }

    void record(long bytesRequested, boolean hit) {
        Counts c = sites.computeIfAbsent(locator.get(), site -> new Counts());
        c.acquires.increment();
        (hit ? c.hits : c.misses).increment();
        c.bytes.add(bytesRequested);
    }

    /** Every site recorded so far, the most bytes requested first. */
    List<DevicePoolSite> snapshot() {
        List<DevicePoolSite> out = new ArrayList<>(sites.size());
        sites.forEach((site, c) -> out.add(
                new DevicePoolSite(site, c.acquires.sum(), c.hits.sum(), c.misses.sum(), c.bytes.sum())));
        out.sort(Comparator.comparingLong(DevicePoolSite::requestedBytes).reversed());
        return out;
    }
}
