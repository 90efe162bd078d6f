package dev.gatun.cuda;

import java.lang.foreign.ValueLayout;

/** The element types of typed device views, with their sizes. */
public enum ElementType {
    /** 8-bit integer ({@code char}, {@code int8_t}, {@code uint8_t}). */
    BYTE(1),
    /** 16-bit integer ({@code short}, {@code int16_t}). */
    SHORT(2),
    /** IEEE 754 half precision ({@code __half}), held on the host as raw 16-bit patterns. */
    HALF(2),
    /** bfloat16 ({@code __nv_bfloat16}), held on the host as raw 16-bit patterns. */
    BFLOAT16(2),
    /** 32-bit integer ({@code int}). */
    INT(4),
    /** 32-bit float ({@code float}). */
    FLOAT(4),
    /** 64-bit integer ({@code long long}). */
    LONG(8),
    /** 64-bit float ({@code double}). */
    DOUBLE(8);

    private final int bytes;

    ElementType(int bytes) {
        this.bytes = bytes;
    }

    /** {@return size of one element in bytes} */
    public long byteSize() {
        return bytes;
    }

    /** {@return the Java layout an element of this type is read with on the host (HALF and BFLOAT16 as raw shorts)} */
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
