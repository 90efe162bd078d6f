package dev.gatun.cuda.internal.nvtx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Event attributes structures ({@code nvtxEventAttributes_t}): built once per label, so that a
 * range or marker hands the tool a ready structure and allocates nothing; one with a payload is
 * a copy in the calling thread's own block, since a label's structure is shared by every thread.
 */
public final class Attributes {

    private static final long BYTES = NvtxAbi.EVENT_ATTRIBUTES.byteSize();
    // Arena.ofAuto frees a thread's block once the thread (or virtual thread) is gone.
    private static final ThreadLocal<MemorySegment> PAYLOAD_BLOCK = ThreadLocal.withInitial(
            () -> Arena.ofAuto().allocate(NvtxAbi.EVENT_ATTRIBUTES));

    private Attributes() {
    }

    /**
     * A label's message: registered with the tool ({@code nvtxDomainRegisterStringA}) when the
     * tool registers strings, else the text itself. Its arena (automatic) also holds the
     * structures of the labels made with it, so the text lives as long as any of them.
     * Only with a tool attached: without one, nothing reads it.
     */
    public record Message(Arena arena, MemorySegment segment, boolean registered) {

        /** @param domain the domain's handle, NULL for the default domain */
        public static Message of(MemorySegment domain, String text) {
            Arena arena = Arena.ofAuto();
            MemorySegment ascii = arena.allocateFrom(text);
            MemorySegment handle = NvtxCalls.registerString(domain, ascii);
            return handle.equals(MemorySegment.NULL) ? new Message(arena, ascii, false)
                    : new Message(arena, handle, true);
        }
    }

    /** The structure of a label with {@code message}, in the message's arena. */
    public static MemorySegment label(Message message, int category, boolean colored, int argb) {
        return of(message.arena(), message.segment(), message.registered(), category, colored, argb);
    }

    /**
     * A new structure in {@code arena}.
     *
     * @param message a registered string handle when {@code registered}, else a NUL-terminated
     *     ASCII string that lives as long as the structure
     * @param argb the color, used when {@code colored}
     */
    public static MemorySegment of(Arena arena, MemorySegment message, boolean registered, int category,
            boolean colored, int argb) {
        MemorySegment a = arena.allocate(NvtxAbi.EVENT_ATTRIBUTES); // zeroed: no payload, reserved 0
        a.set(JAVA_SHORT, NvtxAbi.VERSION_OFFSET, (short) NvtxAbi.VERSION);
        a.set(JAVA_SHORT, NvtxAbi.SIZE_OFFSET, (short) BYTES);
        a.set(JAVA_INT, NvtxAbi.CATEGORY_OFFSET, category);
        if (colored) {
            a.set(JAVA_INT, NvtxAbi.COLOR_TYPE_OFFSET, NvtxAbi.COLOR_ARGB);
            a.set(JAVA_INT, NvtxAbi.COLOR_OFFSET, argb);
        }
        a.set(JAVA_INT, NvtxAbi.MESSAGE_TYPE_OFFSET, registered ? NvtxAbi.MESSAGE_REGISTERED : NvtxAbi.MESSAGE_ASCII);
        a.set(ADDRESS, NvtxAbi.MESSAGE_OFFSET, message);
        return a;
    }

    /**
     * {@code attributes} with a signed 64-bit payload, in this thread's block: valid until this
     * thread's next call here (the tool reads it during the NVTX call it is passed to).
     */
    public static MemorySegment withPayload(MemorySegment attributes, long payload) {
        MemorySegment block = PAYLOAD_BLOCK.get();
        MemorySegment.copy(attributes, 0, block, 0, BYTES);
        block.set(JAVA_INT, NvtxAbi.PAYLOAD_TYPE_OFFSET, NvtxAbi.PAYLOAD_INT64);
        block.set(JAVA_LONG, NvtxAbi.PAYLOAD_OFFSET, payload);
        return block;
    }
}
