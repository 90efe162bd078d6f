package dev.gatun.cuda.junit;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.LiveOwner;
import dev.gatun.cuda.OwnerKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What was live in one context before a test, and what the test left open on top of it. With
 * leak tracking the owners themselves are compared and named with their allocation sites;
 * without it (the context was opened before the extension, with other options), their counts
 * per kind.
 */
final class LeakCheck {

    /** How many frames of an allocation site a report shows, past Gatun's own. */
    private static final int FRAMES = 6;

    private final CudaContext context;
    private final boolean tracked;
    /** The ids of the live owners, with leak tracking. */
    private final Set<Long> ids;
    /** The live owners per kind, by ordinal, without it. */
    private final long[] counts;

    private LeakCheck(CudaContext context) {
        this.context = context;
        this.tracked = context.options().leakTracking();
        this.ids = tracked ? context.diagnostics().liveOwners().stream().map(LiveOwner::id).collect(Collectors.toSet()) : Set.of();
        this.counts = tracked ? null : countsOf(context);
    }

    /** Takes the baseline of {@code context} now. */
    static LeakCheck before(CudaContext context) {
        return new LeakCheck(context);
    }

    CudaContext context() {
        return context;
    }

    /**
     * What the test left open, as a failure message; null when nothing. A closed or poisoned
     * context is not checked: a closed one has no owners, and a poisoned one fails the test anyway.
     */
    String after() {
        if (context.isClosed() || context.diagnostics().poisonedBy().isPresent()) {
            return null;
        }
        context.reap();
        String leaked = leaked();
        if (leaked != null) {
            // An owner closed during the test may still be held by retirement (a kernel keeps its
            // module until its last launch has completed): wait for the queued work, which reaps.
            context.synchronize();
            leaked = leaked();
        }
        return leaked;
    }

    private String leaked() {
        String where = "device " + context.device().ordinal() + "'s context";
        if (!tracked) {
            long[] now = countsOf(context);
            List<String> more = new ArrayList<>();
            for (OwnerKind kind : OwnerKind.values()) {
                long n = now[kind.ordinal()] - counts[kind.ordinal()];
                if (n > 0) {
                    more.add(n + " " + kind);
                }
            }
            return more.isEmpty() ? null : "the test left " + String.join(", ", more) + " of " + where + " open; close "
                    + "them (try-with-resources). The context was opened without leak tracking, so they cannot be named: "
                    + "let the extension open it first, or run with -Dgatun.leakTracking=true";
        }
        List<LiveOwner> left = context.diagnostics().liveOwners().stream().filter(o -> !ids.contains(o.id())).toList();
        if (left.isEmpty()) {
            return null;
        }
        StringBuilder message = new StringBuilder("the test left ").append(left.size())
                .append(left.size() == 1 ? " owner" : " owners").append(" of ").append(where)
                .append(" open; close them (try-with-resources):");
        for (LiveOwner owner : left) {
            message.append("\n  ").append(owner.identity()).append(", created");
            for (StackTraceElement frame : callerFrames(owner.allocationSite())) {
                message.append("\n      at ").append(frame);
            }
        }
        return message.toString();
    }

    /** The staging blocks are the context's own, kept until it closes: they are not counted. */
    private static long[] countsOf(CudaContext context) {
        long[] counts = new long[OwnerKind.values().length];
        for (OwnerKind kind : OwnerKind.values()) {
            counts[kind.ordinal()] = kind == OwnerKind.STAGING ? 0 : context.diagnostics().liveOwners(kind);
        }
        return counts;
    }

    /** The frames of the code that created an owner: past Gatun's own, up to the test framework's. */
    static List<StackTraceElement> callerFrames(List<StackTraceElement> site) {
        int first = 0;
        while (first < site.size() && isGatun(site.get(first).getClassName())) {
            first++;
        }
        List<StackTraceElement> frames = new ArrayList<>();
        for (int i = first; i < site.size() && frames.size() < FRAMES; i++) {
            String c = site.get(i).getClassName();
            if (c.startsWith("org.junit.") || c.startsWith("java.lang.reflect.") || c.startsWith("jdk.internal.reflect.")) {
                break;
            }
            frames.add(site.get(i));
        }
        return frames;
    }

    /** Gatun's library packages (an application's code may live under dev.gatun.cuda too, as its GPU suite does). */
    private static boolean isGatun(String className) {
        String pkg = className.substring(0, Math.max(className.lastIndexOf('.'), 0));
        return pkg.equals("dev.gatun.cuda") || pkg.equals("dev.gatun.cuda.nvrtc") || pkg.equals("dev.gatun.cuda.graph")
                || pkg.startsWith("dev.gatun.cuda.internal");
    }
}
