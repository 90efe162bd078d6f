// Gatun conditional graph nodes: device side.
//
// A conditional node (Graph.addIf, addIfElse, addWhile, addSwitch in Java) runs its body graphs
// according to the value of its ConditionalHandle when the node is reached: IF runs its body
// when the value is not 0 (IF/ELSE runs the second body when it is 0), WHILE runs its body again
// and again while the value is not 0 (checked before the first run and after each), SWITCH runs
// body number `value` (none when the value is out of range). Kernels set the value with the
// helpers below; pass the handle as a kernel argument (ConditionalHandle.asKernelArg(): an
// `unsigned long long`, which is what cudaGraphConditionalHandle is).
//
// cudaGraphSetConditional is a device function the CUDA driver provides: a module compiled
// without relocatable device code (NVRTC's default) calls it through an address the driver fills
// in when it loads the module, so no libcudadevrt link is needed. Set a handle only from kernels
// of the graph its node belongs to (or of that node's bodies); the value is read when the
// conditional node starts, so set it in a node the conditional node depends on.
#ifndef GATUN_CONDITIONAL_CUH
#define GATUN_CONDITIONAL_CUH

#ifndef __CUDA_DEVICE_RUNTIME_API_H__
// NVRTC declares neither unless the CUDA toolkit's headers are included: the same declarations
// as cuda_device_runtime_api.h (CUDA 12.3 and later).
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                      unsigned int value);
#endif

// Sets the value the conditional node of `handle` reads: 0 skips an IF body (and ends a WHILE
// loop), anything else runs it; for a SWITCH node, the number of the body to run.
__device__ __forceinline__ void gatun_conditional_set(cudaGraphConditionalHandle handle, unsigned int value)
{
    cudaGraphSetConditional(handle, value);
}

// True in exactly one thread of the grid: thread (0,0,0) of the block that reaches this call
// last, once every other block has reached it (their earlier global writes are then visible to
// that thread). Every thread of every block must call it (it synchronizes the block).
// `arrivals` is a device word that is 0 before the first launch; the last block resets it to 0,
// so the next launch (or the next WHILE iteration) finds it 0 again.
__device__ __forceinline__ bool gatun_last_block(unsigned int* arrivals)
{
    __shared__ bool last;
    __syncthreads(); // every thread of this block is done with its writes
    bool first = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    if (first) {
        __threadfence(); // this block's writes are visible before it counts itself in
        unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
        // atomicInc wraps to 0 when it passes blocks - 1: the last block counts the word back to 0.
        last = atomicInc(arrivals, blocks - 1) == blocks - 1;
        if (last) {
            __threadfence(); // see the other blocks' writes
        }
    }
    __syncthreads();
    return first && last;
}

#endif // GATUN_CONDITIONAL_CUH
