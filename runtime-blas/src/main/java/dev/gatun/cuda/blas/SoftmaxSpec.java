package dev.gatun.cuda.blas;

import java.util.Objects;

/**
 * A cuDNN softmax forward over an NCHW tensor of {@code n x c x h x w} elements, packed:
 * {@link Mode#INSTANCE} normalizes each of the n rows over its c h w elements (an attention row:
 * n = rows, c = columns, h = w = 1), {@link Mode#CHANNEL} each (n, h, w) over its c channels.
 *
 * @param n the outermost dimension
 * @param c the channels
 * @param h the height
 * @param w the width
 * @param type the type of x and y
 * @param mode over which elements each softmax runs
 * @param log whether it computes log(softmax) ({@code CUDNN_SOFTMAX_LOG}) instead of softmax
 *     ({@code CUDNN_SOFTMAX_ACCURATE}: the maximum is subtracted first)
 */
public record SoftmaxSpec(int n, int c, int h, int w, BlasType type, Mode mode, boolean log) {

    /** Over which elements each softmax is taken. */
    public enum Mode {
        /** Per n, over c h w ({@code CUDNN_SOFTMAX_MODE_INSTANCE}). */
        INSTANCE,
        /** Per (n, h, w), over c ({@code CUDNN_SOFTMAX_MODE_CHANNEL}). */
        CHANNEL
    }

    /** Checks presence; {@link #validate()} checks the sizes. */
    public SoftmaxSpec {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(mode, "mode");
    }

    /**
     * A softmax of each of {@code rows} rows over its {@code columns} elements.
     *
     * @param rows how many rows
     * @param columns the elements of each
     * @param type their type
     * @return the spec
     */
    public static SoftmaxSpec rows(int rows, int columns, BlasType type) {
        return new SoftmaxSpec(rows, columns, 1, 1, type, Mode.INSTANCE, false);
    }

    /** {@return the bytes x and y each hold} */
    public long bytes() {
        return (long) n * c * h * w * type.bytes();
    }

    /**
     * Checks the sizes.
     *
     * @return this spec
     * @throws IllegalArgumentException when a dimension is below 1, or the tensor has more than
     *     2^31 - 1 elements (cuDNN's int strides)
     */
    public SoftmaxSpec validate() {
        if (n < 1 || c < 1 || h < 1 || w < 1) {
            throw new IllegalArgumentException("a softmax tensor needs every dimension at least 1, not " + n + " x " + c
                    + " x " + h + " x " + w);
        }
        if ((long) n * c * h * w > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a softmax tensor of " + ((long) n * c * h * w) + " elements is past "
                    + "cuDNN's int strides");
        }
        return this;
    }
}
