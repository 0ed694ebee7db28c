// block_reduce.cuh — sums and maxima over the threads of a block, the
// building block of every row kernel (reductions, softmax, the norms):
// first within each warp with shuffles, then across the warps through
// shared memory. Every thread of the block must call it; all get the result.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace nc {
namespace cuda {

__device__ inline double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__device__ inline double warp_max(double v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, offset));
    return v;
}

// blockDim.x must be a multiple of 32 (we always launch 256 threads).
__device__ inline double block_sum(double v) {
    __shared__ double partial[32];
    __shared__ double result;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    __syncthreads();  // `partial` may still be read by a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0;
        v = warp_sum(v);
        if (lane == 0) result = v;
    }
    __syncthreads();
    return result;
}

__device__ inline double block_max(double v) {
    __shared__ double partial[32];
    __shared__ double result;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? partial[lane] : -INFINITY;
        v = warp_max(v);
        if (lane == 0) result = v;
    }
    __syncthreads();
    return result;
}

}  // namespace cuda
}  // namespace nc
