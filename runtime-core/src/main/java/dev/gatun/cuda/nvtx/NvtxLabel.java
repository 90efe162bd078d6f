package dev.gatun.cuda.nvtx;

import dev.gatun.cuda.internal.nvtx.Attributes;
import dev.gatun.cuda.internal.nvtx.NvtxCalls;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * What a range or marker shows: a message registered with the tool once, a category and a
 * color, in an event attributes structure built once. Immutable; {@link #withColor} and
 * {@link #withCategory} make new labels (build them once, not per range). From
 * {@link NvtxDomain#label(String)}; usable only with that domain.
 */
public final class NvtxLabel {

    private final NvtxDomain domain;
    private final String message;
    private final int category;
    private final boolean colored;
    private final int argb;
    /** The message as the tool knows it (registered once, shared by the labels made from this one); null with no tool. */
    private final Attributes.Message registered;
    /** The event attributes handed to the tool; NULL with no tool attached (nothing reads it). */
    private final MemorySegment attributes;

    /** A label of a new message: registered with the tool now. */
    NvtxLabel(NvtxDomain domain, String message) {
        this(domain, message, NvtxCalls.ATTACHED ? Attributes.Message.of(domain.handle(), checkText(message)) : null,
                0, false, 0);
    }

    private NvtxLabel(NvtxDomain domain, String message, Attributes.Message registered, int category, boolean colored,
            int argb) {
        this.domain = domain;
        this.message = checkText(message);
        this.registered = registered;
        this.category = category;
        this.colored = colored;
        this.argb = argb;
        this.attributes = registered != null ? Attributes.label(registered, category, colored, argb) : MemorySegment.NULL;
    }

    /** Refuses text that C would cut short; returns it. */
    static String checkText(String text) {
        Objects.requireNonNull(text, "text");
        if (text.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("NVTX text is a C string and cannot hold a NUL character: '"
                    + text.replace("\0", "\\0") + "'");
        }
        return text;
    }

    /** {@return the domain this label belongs to} */
    public NvtxDomain domain() {
        return domain;
    }

    /** {@return the message ranges and markers of this label show} */
    public String message() {
        return message;
    }

    /** {@return the category, 0 for none} */
    public int category() {
        return category;
    }

    /** {@return whether this label has a color} */
    public boolean hasColor() {
        return colored;
    }

    /** {@return the color as ARGB (meaningful when {@link #hasColor()})} */
    public int argb() {
        return argb;
    }

    /**
     * {@return this label with a color}
     *
     * @param argb the color as ARGB, alpha in the top byte (e.g. {@code 0xFF76B900})
     */
    public NvtxLabel withColor(int argb) {
        return new NvtxLabel(domain, message, registered, category, true, argb);
    }

    /**
     * {@return this label in {@code category}}
     *
     * @param category 0 for none, else a category of the domain (named with {@link NvtxDomain#nameCategory})
     * @throws IllegalArgumentException when {@code category} is negative
     */
    public NvtxLabel withCategory(int category) {
        if (category < 0) {
            throw new IllegalArgumentException("an NVTX category is 0 (none) or a number from 1; got " + category);
        }
        return new NvtxLabel(domain, message, registered, category, colored, argb);
    }

    MemorySegment attributes() {
        return attributes;
    }

    @Override
    public String toString() {
        return "NvtxLabel[" + domain.name() + "@" + message + (category != 0 ? ", category " + category : "")
                + (colored ? String.format(", color %08X", argb) : "") + "]";
    }
}
