package dev.gatun.cuda.blas;

import java.util.Objects;

/**
 * A scaled-dot-product attention forward, inference only (no dropout, no softmax statistics):
 * {@code O = softmax(scale Q K^T [+ causal mask]) V} for each of {@code batch x heads} heads.
 * Q and O are {@code seqQ x headDim}, K and V {@code seqKv x headDim}, each tensor packed in
 * batch, head, sequence, head-dimension order (BHSD, the head dimension contiguous), all of one
 * type. The causal mask is aligned top left: row i (a query) sees columns (keys) 0 to i.
 *
 * @param batch the batch size
 * @param heads the heads (of Q, K and V alike)
 * @param seqQ the query sequence length
 * @param seqKv the key and value sequence length
 * @param headDim the head dimension of Q, K and V
 * @param type the type of Q, K, V and O: F16 or BF16 (the fused engines' inputs)
 * @param scale the factor of Q K^T (commonly 1 / sqrt(headDim), what {@link #of} sets)
 * @param causalMask whether key j is hidden from query i when j &gt; i ({@link #causal()} sets it)
 */
public record AttentionSpec(int batch, int heads, int seqQ, int seqKv, int headDim, BlasType type, float scale,
        boolean causalMask) {

    /**
     * The largest head dimension cuDNN 9.14 documents for its fused attention forward (on Hopper;
     * Ampere and Blackwell engines may stop at 128, which cuDNN then refuses with a status). On an
     * H100 an unmasked plan of head dimension 264 also built (probes/cudnn-sdpa, not run nor
     * checked against the CPU), so this is the documented limit, not the engines' last word.
     */
    public static final int MAX_HEAD_DIM = 256;

    /** Checks presence; {@link #validate()} checks the values. */
    public AttentionSpec {
        Objects.requireNonNull(type, "type");
    }

    /**
     * An attention without mask, scaled by {@code 1 / sqrt(headDim)}.
     *
     * @param batch the batch size
     * @param heads the heads
     * @param seqQ the query sequence length
     * @param seqKv the key and value sequence length
     * @param headDim the head dimension
     * @param type F16 or BF16
     * @return the spec
     */
    public static AttentionSpec of(int batch, int heads, int seqQ, int seqKv, int headDim, BlasType type) {
        return new AttentionSpec(batch, heads, seqQ, seqKv, headDim, type, (float) (1 / Math.sqrt(headDim)), false);
    }

    /**
     * This attention with another scale.
     *
     * @param scale the factor of Q K^T
     * @return the spec
     */
    public AttentionSpec withScale(float scale) {
        return new AttentionSpec(batch, heads, seqQ, seqKv, headDim, type, scale, causalMask);
    }

    /** {@return this attention with the causal mask (query i sees keys 0 to i)} */
    public AttentionSpec causal() {
        return new AttentionSpec(batch, heads, seqQ, seqKv, headDim, type, scale, true);
    }

    /** {@return the bytes of Q and of O} */
    public long bytesQ() {
        return Math.multiplyExact(elements(seqQ), (long) type.bytes());
    }

    /** {@return the bytes of K and of V} */
    public long bytesKv() {
        return Math.multiplyExact(elements(seqKv), (long) type.bytes());
    }

    private long elements(int seq) {
        return Math.multiplyExact(Math.multiplyExact(Math.multiplyExact((long) batch, heads), seq), (long) headDim);
    }

    /**
     * Checks the values against what cuDNN 9.14's fused attention states, before cuDNN sees them.
     *
     * @return this spec
     * @throws IllegalArgumentException when a dimension is below 1, the head dimension is not a
     *     multiple of 8 up to {@link #MAX_HEAD_DIM}, the type is not F16 or BF16, the scale is not
     *     finite, or a tensor has more than 2^62 bytes
     */
    public AttentionSpec validate() {
        if (batch < 1 || heads < 1 || seqQ < 1 || seqKv < 1 || headDim < 1) {
            throw new IllegalArgumentException("an attention needs batch, heads, seqQ, seqKv and headDim at least 1: "
                    + this);
        }
        if (headDim % 8 != 0 || headDim > MAX_HEAD_DIM) {
            throw new IllegalArgumentException("headDim is " + headDim + ": cuDNN's fused attention takes a head "
                    + "dimension that is a multiple of 8, up to " + MAX_HEAD_DIM + " (pad the heads with zeros to the "
                    + "next multiple of 8)");
        }
        if (type != BlasType.F16 && type != BlasType.BF16) {
            throw new IllegalArgumentException("an attention of " + type + ": cuDNN's fused attention takes F16 or BF16 "
                    + "Q, K and V (convert the inputs)");
        }
        if (!Float.isFinite(scale)) {
            throw new IllegalArgumentException("the scale is " + scale + ": pass a finite factor");
        }
        try {
            Math.multiplyExact(Math.max(bytesQ(), bytesKv()), 2L);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("an attention tensor of " + this + " is past 2^62 bytes");
        }
        return this;
    }
}
