package dev.gatun.cuda.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A prepared operation's alpha and beta in host memory of its scale type (a GEMM's compute type's,
 * or float for cuDNN), read by the library during each call. The memory is one block of an automatic arena, freed once the
 * operation that holds this record is unreachable; {@link #alpha} and {@link #beta} are the same
 * bytes as segments of the global scope, which is what a warm call passes: a downcall acquires
 * and releases the session of every segment argument that is not global (two atomic updates per
 * argument per call, as runtime-core's {@code internal.driver.OutBlock} notes).
 *
 * <p>Safety: nothing keeps the block alive through the views, so the operation keeps itself
 * reachable until its library call returned ({@code Reference.reachabilityFence}), and with it
 * this record and {@code owner}; the libraries read the scalars during the call and keep no
 * pointer to them (host pointer mode).
 *
 * @param owner the block, which the automatic arena frees once it is unreachable
 * @param alpha alpha, as a segment of the global scope
 * @param beta beta, likewise
 */
record Scalars(MemorySegment owner, MemorySegment alpha, MemorySegment beta) {

    static Scalars of(BlasType scale, float alpha, float beta) {
        MemorySegment owner = Arena.ofAuto().allocate(8, 4);
        if (scale == BlasType.F16) {
            owner.set(ValueLayout.JAVA_SHORT, 0, Float.floatToFloat16(alpha));
            owner.set(ValueLayout.JAVA_SHORT, 4, Float.floatToFloat16(beta));
        } else {
            owner.set(ValueLayout.JAVA_FLOAT, 0, alpha);
            owner.set(ValueLayout.JAVA_FLOAT, 4, beta);
        }
        long bytes = scale == BlasType.F16 ? 2 : 4;
        MemorySegment unscoped = MemorySegment.ofAddress(owner.address()).reinterpret(8);
        return new Scalars(owner, unscoped.asSlice(0, bytes), unscoped.asSlice(4, bytes));
    }
}
