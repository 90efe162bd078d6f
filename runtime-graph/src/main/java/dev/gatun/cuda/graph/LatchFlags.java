package dev.gatun.cuda.graph;

/**
 * The bits kernels raise in the validation word, as {@code gatun_latch.cuh} defines them: what
 * {@link ValidationLatch#consume} returns is an OR of these.
 */
public final class LatchFlags {

    /** An index, position or length was outside the range the kernel was built for. */
    public static final int OUT_OF_RANGE = 0x1;
    /** Bits below this are Gatun's; this one and above are for the caller's own kernels. */
    public static final int FIRST_USER_BIT = 8;
    /** How many bits callers have: {@code user(0)} to {@code user(USER_BITS - 1)}. */
    public static final int USER_BITS = Integer.SIZE - FIRST_USER_BIT;

    private LatchFlags() {
    }

    /**
     * Caller-defined bit {@code n}, the host twin of {@code GATUN_LATCH_USER(n)}.
     *
     * @param n which of the caller's bits, from 0
     * @return the bit's mask in the validation word
     * @throws IllegalArgumentException unless {@code 0 <= n < USER_BITS}
     */
    public static int user(int n) {
        if (n < 0 || n >= USER_BITS) {
            throw new IllegalArgumentException("user latch bit must be in [0, " + USER_BITS + "): " + n);
        }
        return 1 << (FIRST_USER_BIT + n);
    }
}
