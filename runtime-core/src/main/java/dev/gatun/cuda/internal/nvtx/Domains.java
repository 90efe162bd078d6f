package dev.gatun.cuda.internal.nvtx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The handles of named domains, one per name for the process, shared by the public API and
 * Gatun's own ranges: a domain is created with the tool once ({@code nvtxDomainCreateA}) and
 * never destroyed (NVTX domains are meant to live as long as the program).
 */
public final class Domains {

    private static final ConcurrentMap<String, MemorySegment> HANDLES = new ConcurrentHashMap<>();

    private Domains() {
    }

    /** The handle of the domain {@code name}: NULL with no tool, or with a tool that does not implement domains. */
    public static MemorySegment handle(String name) {
        if (!NvtxCalls.ATTACHED) {
            return MemorySegment.NULL;
        }
        return HANDLES.computeIfAbsent(name, Domains::create);
    }

    private static MemorySegment create(String name) {
        // The global arena: the name stays valid for as long as the tool may read it.
        return NvtxCalls.createDomain(Arena.global().allocateFrom(name));
    }
}
