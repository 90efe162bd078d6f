package dev.gatun.cuda.internal.nvtx;

import dev.gatun.cuda.internal.settings.Settings;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * NVTX ranges around Gatun's own operations, in the domain {@value #DOMAIN}, when the system
 * property {@value #RANGES_PROPERTY} is true and a tool is attached.
 *
 * <p>{@link #ON} is a {@code static final} read once: every call site tests it first, so with
 * the ranges off (the default) or no tool, the JIT folds the test and its range away and a hot
 * path is what it was. With them on, a range is one NVTX call in and one out around the driver
 * call, on a label built once (a kernel's on its first launch, an executable's when it is
 * instantiated): nothing is allocated per operation but the payload's per-thread copy.
 *
 * <p>Push/pop ranges only enclose a single driver call (a launch, a copy, a graph launch), so
 * the thread cannot change carriers between them; work that may wait (a capture, a pool miss,
 * an out-of-memory rung) uses start/end ranges.
 */
public final class AutomaticRanges {

    /** The domain of Gatun's ranges. */
    public static final String DOMAIN = "Gatun";
    /** The switch ({@code Nvtx.RANGES_PROPERTY}, documented there). */
    public static final String RANGES_PROPERTY = "gatun.nvtx.ranges";
    /** The range-only mode's switch ({@code Nvtx.PAYLOADS_PROPERTY}, documented there). */
    public static final String PAYLOADS_PROPERTY = "gatun.nvtx.payloads";

    /** A misspelt setting, reported by {@link #checkSetting()} (a class initializer must not throw); null when fine. */
    private static final IllegalArgumentException MISCONFIGURED;
    private static final boolean REQUESTED;
    private static final boolean PAYLOADS;

    static {
        boolean requested = false;
        boolean payloads = true;
        IllegalArgumentException misconfigured = null;
        try {
            requested = Settings.flag("system property " + RANGES_PROPERTY, System.getProperty(RANGES_PROPERTY), false);
            payloads = Settings.flag("system property " + PAYLOADS_PROPERTY, System.getProperty(PAYLOADS_PROPERTY),
                    true);
        } catch (IllegalArgumentException e) {
            requested = false;
            misconfigured = e;
        }
        REQUESTED = requested;
        PAYLOADS = payloads;
        MISCONFIGURED = misconfigured;
    }

    /** Whether Gatun ranges its operations: requested, and a tool attached. Test it before any call here. */
    public static final boolean ON = REQUESTED && NvtxCalls.ATTACHED;

    private static final MemorySegment DOMAIN_HANDLE = ON ? Domains.handle(DOMAIN) : MemorySegment.NULL;
    private static final ConcurrentMap<String, MemorySegment> NAMED = new ConcurrentHashMap<>();

    /** Labels of the fixed operations (NULL while off). */
    public static final MemorySegment COPY_TO_DEVICE = fixed("copy host to device");
    public static final MemorySegment COPY_TO_HOST = fixed("copy device to host");
    public static final MemorySegment COPY_ON_DEVICE = fixed("copy device to device");
    public static final MemorySegment COPY_PEER = fixed("copy peer to peer");
    public static final MemorySegment MEMSET = fixed("memset");
    public static final MemorySegment POOL_MISS = fixed("device pool miss");

    private AutomaticRanges() {
    }

    private static MemorySegment fixed(String message) {
        return ON ? label(message) : MemorySegment.NULL;
    }

    /**
     * Throws when a setting is misspelt; called where a context opens, so a bad value fails the
     * program's first context instead of silently leaving the ranges off.
     *
     * @throws IllegalArgumentException naming the setting and what it accepts
     */
    public static void checkSetting() {
        if (MISCONFIGURED != null) {
            throw new IllegalArgumentException(MISCONFIGURED.getMessage(), MISCONFIGURED);
        }
    }

    /** {@return whether the ranges are on}, after {@link #checkSetting()} */
    public static boolean enabled() {
        checkSetting();
        return ON;
    }

    /** A new label of Gatun's domain (NULL while off): for a name of its own, such as an executable's. */
    public static MemorySegment label(String message) {
        return ON ? Attributes.label(Attributes.Message.of(DOMAIN_HANDLE, message), 0, false, 0) : MemorySegment.NULL;
    }

    /**
     * The label of {@code message}, one per distinct message for the process (a kernel's name, a
     * stream's capture, a rung): looking it up again allocates nothing.
     */
    public static MemorySegment named(String message) {
        MemorySegment label = NAMED.get(message);
        return label != null ? label : NAMED.computeIfAbsent(message, AutomaticRanges::label);
    }

    /** Opens a range of this thread; {@link #pop()} closes it. */
    public static void push(MemorySegment label) {
        NvtxCalls.push(DOMAIN_HANDLE, label);
    }

    /** {@link #push(MemorySegment)} with a payload (dropped in the range-only mode). */
    public static void push(MemorySegment label, long payload) {
        NvtxCalls.push(DOMAIN_HANDLE, PAYLOADS ? Attributes.withPayload(label, payload) : label);
    }

    public static void pop() {
        NvtxCalls.pop(DOMAIN_HANDLE);
    }

    /** Starts a range of the process, with a payload (dropped in the range-only mode); {@link #end} ends it. */
    public static long start(MemorySegment label, long payload) {
        return NvtxCalls.start(DOMAIN_HANDLE, PAYLOADS ? Attributes.withPayload(label, payload) : label);
    }

    /** Starts a range of the process without a payload. */
    public static long start(MemorySegment label) {
        return NvtxCalls.start(DOMAIN_HANDLE, label);
    }

    public static void end(long range) {
        NvtxCalls.end(DOMAIN_HANDLE, range);
    }
}
