// block_reduce.cuh — sums and maxima over the threads of a block, the
// building block of every row kernel (reductions, softmax, the norms):
// first within each warp with shuffles, then across the warps through
// shared memory. Every thread of the block must call it; all get the result.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace nc {
namespace cuda {

struct Add {
    __device__ double operator()(double a, double b) const { return a + b; }
};
struct Max {
    __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// Every thread's v combined with `op` (whose neutral value is `identity`).
// blockDim.x must be a multiple of 32 (we always launch 128 or 256 threads).
template <typename Op>
__device__ double block_reduce(double v, Op op, double identity) {
    __shared__ double partial[32];
    __shared__ double result;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
    // No barrier before writing `partial`: a previous call's reads of it
    // (warp 0's) came before that call's last barrier, and every thread
    // read that call's `result` before it can reach this call's second one.
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? partial[lane] : identity;
        for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
        if (lane == 0) result = v;
    }
    __syncthreads();
    return result;
}

__device__ inline double block_sum(double v) { return block_reduce(v, Add{}, 0.0); }
__device__ inline double block_max(double v) { return block_reduce(v, Max{}, -INFINITY); }

}  // namespace cuda
}  // namespace nc
