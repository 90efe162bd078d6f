// Gatun validation latch: device side.
//
// One 4-byte word per context. A kernel that detects a bad input (an index or position out of
// range, say) raises bits in it instead of reading or writing out of bounds; the host reads the
// word once per request, at the request boundary (ValidationLatch.consume in Java). The word is
// cleared only when a validation generation opens, never by a graph reset, so bits raised in an
// eager launch or a graph replay are never lost before someone consumes them.
//
// Pass the word's device address to the kernel as an `unsigned int*` argument. Bits are only
// ever ORed in: raising is idempotent and order-free, so any number of threads, blocks and
// kernels may raise at once.
#ifndef GATUN_LATCH_CUH
#define GATUN_LATCH_CUH

// An index, position or length was outside the range the kernel was built for.
#define GATUN_LATCH_OUT_OF_RANGE 0x1u
// Bits 0..7 are Gatun's; bits 8..31 are free for the caller's own kernels: GATUN_LATCH_USER(0..23).
#define GATUN_LATCH_FIRST_USER_BIT 8
#define GATUN_LATCH_USER(n) (1u << (GATUN_LATCH_FIRST_USER_BIT + (n)))

// Raises `bits` in the latch word. Cheap when nothing is wrong: call it only on the error path.
__device__ __forceinline__ void gatun_latch_raise(unsigned int* word, unsigned int bits)
{
    atomicOr(word, bits);
}

// The bits raised so far in this generation, as far as this thread can see them. Lets a later
// kernel skip work once an earlier one has found bad input; not a substitute for the host's
// consume, which waits for all submitted work.
__device__ __forceinline__ unsigned int gatun_latch_peek(const unsigned int* word)
{
    return *(const volatile unsigned int*)word;
}

#endif // GATUN_LATCH_CUH
