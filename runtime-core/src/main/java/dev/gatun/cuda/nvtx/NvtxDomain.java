package dev.gatun.cuda.nvtx;

import dev.gatun.cuda.internal.nvtx.Attributes;
import dev.gatun.cuda.internal.nvtx.NvtxCalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * An NVTX domain: a namespace of ranges, markers, registered strings and categories, shown apart
 * by profilers. From {@link Nvtx#domain(String)} or {@link Nvtx#global()}.
 *
 * <p>Two kinds of range:
 * <ul>
 * <li>{@link #push} / {@link #pop}: nested ranges of the calling OS thread, closed in reverse
 * order by the same thread; {@link #push} returns an {@link NvtxScope} for try-with-resources.
 * On a virtual thread, a push and its pop can run on different carriers (whenever the thread
 * parks between them), and a tool keeps one stack per OS thread: there, prefer start/end.</li>
 * <li>{@link #start} / {@link #end}: a range of the process, which any thread may end (an
 * asynchronous request, a capture); {@code start} returns its id.</li>
 * </ul>
 *
 * <p>With an {@link NvtxLabel} (built once, its message registered with the tool) a range or
 * marker allocates nothing; with a payload, neither. The {@code String} overloads copy their
 * text to native memory on each call while a tool is attached. With no tool, every method
 * returns at once. Thread-safe.
 */
public final class NvtxDomain {

    private final String name;
    /** NULL for the default domain, and for any domain when the tool does not implement domains. */
    private final MemorySegment handle;
    private final NvtxScope scope = new NvtxScope(this);

    NvtxDomain(String name, MemorySegment handle) {
        this.name = name;
        this.handle = handle;
    }

    /** {@return this domain's name; {@code "(default)"} for the default domain} */
    public String name() {
        return name;
    }

    /**
     * A label of this domain with {@code message}, no category and no color: registered with the
     * tool now ({@code nvtxDomainRegisterStringA}), so that each range or marker of it hands the
     * tool a handle and a ready structure. Build labels once and keep them (in a static final
     * or a field): each one holds a little native memory and a string registered for the life
     * of the process.
     *
     * @param message what ranges and markers of the label show
     * @return the label
     * @throws IllegalArgumentException when {@code message} holds a NUL character
     */
    public NvtxLabel label(String message) {
        return new NvtxLabel(this, message);
    }

    /**
     * Names a category of this domain, as profilers show it ({@code nvtxDomainNameCategoryA}).
     *
     * @param category from 1 (0 means "no category")
     * @param name the category's name
     * @throws IllegalArgumentException when {@code category} is below 1
     */
    public void nameCategory(int category, String name) {
        if (category < 1) {
            throw new IllegalArgumentException("an NVTX category is a number from 1 (0 means none); got " + category);
        }
        NvtxLabel.checkText(name);
        if (NvtxCalls.ATTACHED) {
            try (Arena arena = Arena.ofConfined()) {
                NvtxCalls.nameCategory(handle, category, arena.allocateFrom(name));
            }
        }
    }

    /**
     * Opens a range of this thread ({@code nvtxDomainRangePushEx}) until {@link #pop()}.
     *
     * @param label a label of this domain
     * @return this domain's scope, whose {@code close()} pops (the same object on every call)
     * @throws IllegalArgumentException when the label is another domain's
     */
    public NvtxScope push(NvtxLabel label) {
        MemorySegment attributes = attributesOf(label);
        if (NvtxCalls.ATTACHED) {
            NvtxCalls.push(handle, attributes);
        }
        return scope;
    }

    /**
     * {@link #push(NvtxLabel)} with a signed 64-bit payload (a step, a batch size, a byte count).
     *
     * @param label a label of this domain
     * @param payload the range's payload
     * @return this domain's scope, whose {@code close()} pops
     * @throws IllegalArgumentException when the label is another domain's
     */
    public NvtxScope push(NvtxLabel label, long payload) {
        MemorySegment attributes = attributesOf(label);
        if (NvtxCalls.ATTACHED) {
            NvtxCalls.push(handle, Attributes.withPayload(attributes, payload));
        }
        return scope;
    }

    /**
     * {@link #push(NvtxLabel)} of a message not registered: copied to native memory on each call.
     *
     * @param message what the range shows
     * @return this domain's scope, whose {@code close()} pops
     * @throws IllegalArgumentException when {@code message} holds a NUL character
     */
    public NvtxScope push(String message) {
        NvtxLabel.checkText(message);
        if (NvtxCalls.ATTACHED) {
            try (Arena arena = Arena.ofConfined()) {
                NvtxCalls.push(handle, ascii(arena, message));
            }
        }
        return scope;
    }

    /** Closes this thread's innermost open range of this domain ({@code nvtxDomainRangePop}). */
    public void pop() {
        if (NvtxCalls.ATTACHED) {
            NvtxCalls.pop(handle);
        }
    }

    /**
     * Starts a range of the process ({@code nvtxDomainRangeStartEx}), which any thread may
     * {@link #end}.
     *
     * @param label a label of this domain
     * @return the range's id for {@link #end}; 0 when no tool takes it
     * @throws IllegalArgumentException when the label is another domain's
     */
    public long start(NvtxLabel label) {
        MemorySegment attributes = attributesOf(label);
        return NvtxCalls.ATTACHED ? NvtxCalls.start(handle, attributes) : 0;
    }

    /**
     * {@link #start(NvtxLabel)} with a signed 64-bit payload.
     *
     * @param label a label of this domain
     * @param payload the range's payload
     * @return the range's id for {@link #end}; 0 when no tool takes it
     * @throws IllegalArgumentException when the label is another domain's
     */
    public long start(NvtxLabel label, long payload) {
        MemorySegment attributes = attributesOf(label);
        return NvtxCalls.ATTACHED ? NvtxCalls.start(handle, Attributes.withPayload(attributes, payload)) : 0;
    }

    /**
     * {@link #start(NvtxLabel)} of a message not registered: copied to native memory on each call.
     *
     * @param message what the range shows
     * @return the range's id for {@link #end}; 0 when no tool takes it
     * @throws IllegalArgumentException when {@code message} holds a NUL character
     */
    public long start(String message) {
        NvtxLabel.checkText(message);
        if (!NvtxCalls.ATTACHED) {
            return 0;
        }
        try (Arena arena = Arena.ofConfined()) {
            return NvtxCalls.start(handle, ascii(arena, message));
        }
    }

    /**
     * Ends a range of this domain, from any thread ({@code nvtxDomainRangeEnd}).
     *
     * @param range the id {@link #start} returned
     */
    public void end(long range) {
        if (NvtxCalls.ATTACHED) {
            NvtxCalls.end(handle, range);
        }
    }

    /**
     * Marks an instant ({@code nvtxDomainMarkEx}).
     *
     * @param label a label of this domain
     * @throws IllegalArgumentException when the label is another domain's
     */
    public void mark(NvtxLabel label) {
        MemorySegment attributes = attributesOf(label);
        if (NvtxCalls.ATTACHED) {
            NvtxCalls.mark(handle, attributes);
        }
    }

    /**
     * {@link #mark(NvtxLabel)} with a signed 64-bit payload.
     *
     * @param label a label of this domain
     * @param payload the marker's payload
     * @throws IllegalArgumentException when the label is another domain's
     */
    public void mark(NvtxLabel label, long payload) {
        MemorySegment attributes = attributesOf(label);
        if (NvtxCalls.ATTACHED) {
            NvtxCalls.mark(handle, Attributes.withPayload(attributes, payload));
        }
    }

    /**
     * {@link #mark(NvtxLabel)} of a message not registered: copied to native memory on each call.
     *
     * @param message what the marker shows
     * @throws IllegalArgumentException when {@code message} holds a NUL character
     */
    public void mark(String message) {
        NvtxLabel.checkText(message);
        if (NvtxCalls.ATTACHED) {
            try (Arena arena = Arena.ofConfined()) {
                NvtxCalls.mark(handle, ascii(arena, message));
            }
        }
    }

    MemorySegment handle() {
        return handle;
    }

    /** The label's structure, after checking it is this domain's (its string is registered here). */
    private MemorySegment attributesOf(NvtxLabel label) {
        if (label.domain() != this) {
            throw new IllegalArgumentException("the label '" + label.message() + "' is of NVTX domain '"
                    + label.domain().name() + "', not '" + name + "': a registered string belongs to its domain; "
                    + "make the label with this domain's label(...)");
        }
        return label.attributes();
    }

    private static MemorySegment ascii(Arena arena, String message) {
        return Attributes.of(arena, arena.allocateFrom(message), false, 0, false, 0);
    }

    @Override
    public String toString() {
        return "NvtxDomain[" + name + "]";
    }
}
