package dev.gatun.cuda;

import java.lang.foreign.ValueLayout;

/** The element types of typed device views, with their sizes. */
public enum ElementType {
    BYTE(1), SHORT(2), HALF(2), BFLOAT16(2), INT(4), FLOAT(4), LONG(8), DOUBLE(8);

    private final int bytes;

    ElementType(int bytes) {
        this.bytes = bytes;
    }

    /** Size of one element in bytes. */
    public int byteSize() {
        return bytes;
    }

    /** The Java layout an element of this type is read with on the host (HALF and BFLOAT16 as raw shorts). */
    public ValueLayout hostLayout() {
        return switch (this) {
            case BYTE -> ValueLayout.JAVA_BYTE;
            case SHORT, HALF, BFLOAT16 -> ValueLayout.JAVA_SHORT;
            case INT -> ValueLayout.JAVA_INT;
            case FLOAT -> ValueLayout.JAVA_FLOAT;
            case LONG -> ValueLayout.JAVA_LONG;
            case DOUBLE -> ValueLayout.JAVA_DOUBLE;
        };
    }
}
