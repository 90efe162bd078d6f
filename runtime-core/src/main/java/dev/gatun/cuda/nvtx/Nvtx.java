package dev.gatun.cuda.nvtx;

import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import dev.gatun.cuda.internal.nvtx.Domains;
import dev.gatun.cuda.internal.nvtx.NvtxCalls;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * NVTX for this process: whether a tool is attached, the default domain and named domains.
 *
 * <pre>{@code
 * NvtxDomain engine = Nvtx.domain("my-engine");
 * NvtxLabel prefill = engine.label("prefill").withColor(0xFF76B900);
 * try (var _ = engine.push(prefill, step)) {   // a range on this thread, payload: the step
 *     kernel.launch(stream, config, args);
 * }
 * }</pre>
 *
 * <p>A tool attaches when the process starts NVTX (the first use of this class or of Gatun's
 * automatic ranges): the profiler sets {@code NVTX_INJECTION64_PATH} to its injection library,
 * and Gatun loads it and hands it the export tables of the NVTX v3 protocol, as the C header
 * does. Unset, or a library that does not attach (logged once, at WARN), and every call here
 * does nothing.
 */
public final class Nvtx {

    /**
     * The system property that turns on NVTX ranges around Gatun's own operations, in the domain
     * {@value #GATUN_DOMAIN}: {@code true} or {@code false} (the default), read once when NVTX
     * starts. Each kernel launch is a range named by its kernel, each graph launch and upload
     * one named by its executable ({@code GraphExec#7 (device 0)}), each asynchronous copy and
     * memset one named by its direction, each stream capture a range from its begin to its end,
     * each device pool miss and each rung of the out-of-memory ladder one named so. Off, or on
     * with no tool attached, they cost nothing: the switch is a constant the JIT folds.
     */
    public static final String RANGES_PROPERTY = AutomaticRanges.RANGES_PROPERTY;

    /**
     * With {@link #RANGES_PROPERTY} on: whether Gatun's ranges carry a payload (a copy's or a
     * miss's bytes, a graph launch's executable id), {@code true} by default; {@code false} is the
     * range-only mode, names alone, each range one NVTX call in and one out with nothing written
     * per call.
     */
    public static final String PAYLOADS_PROPERTY = AutomaticRanges.PAYLOADS_PROPERTY;

    /** The domain of Gatun's own ranges. */
    public static final String GATUN_DOMAIN = AutomaticRanges.DOMAIN;

    private static final NvtxDomain GLOBAL = new NvtxDomain("(default)", MemorySegment.NULL);
    private static final ConcurrentMap<String, NvtxDomain> DOMAINS = new ConcurrentHashMap<>();

    private Nvtx() {
    }

    /** {@return whether an NVTX tool attached to this process} */
    public static boolean attached() {
        return NvtxCalls.ATTACHED;
    }

    /**
     * {@return whether Gatun ranges its own operations: {@link #RANGES_PROPERTY} is true and a tool is attached}
     *
     * @throws IllegalArgumentException when {@link #RANGES_PROPERTY} or {@link #PAYLOADS_PROPERTY}
     *     is set to something other than true or false
     */
    public static boolean automaticRanges() {
        return AutomaticRanges.enabled();
    }

    /** {@return the default domain, where tools put annotations that name none} */
    public static NvtxDomain global() {
        return GLOBAL;
    }

    /**
     * The domain named {@code name}, created with the tool on first request ({@code nvtxDomainCreateA})
     * and the same object on every later one; domains live as long as the process. A tool that
     * does not implement domains sees its annotations in its default domain.
     *
     * @param name the domain's name, as profilers show it (and as {@code ncu --nvtx-include
     *     "name@range/"} filters by it)
     * @return the domain
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public static NvtxDomain domain(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("an NVTX domain needs a name; use Nvtx.global() for the default domain");
        }
        NvtxDomain domain = DOMAINS.get(name);
        return domain != null ? domain : DOMAINS.computeIfAbsent(name, Nvtx::create);
    }

    private static NvtxDomain create(String name) {
        return new NvtxDomain(name, Domains.handle(name));
    }
}
