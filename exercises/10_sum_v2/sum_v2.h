// Exercise 10 (chapter 10): a CUDA kernel's second version, the full sum.
//
// Version 1 of the backend's sum gives a row to one block of 256 threads,
// so a full reduction (one row of 38.6M gradients) runs on one SM of many
// (NORMCORE_REDUCTION=rows; chapter 10, "A reduction"). Write version 2:
//
//   1. a kernel launched with many blocks (say 2 per SM, or n / 4096): each
//      thread adds the elements i = thread, thread + all threads, ...
//      (a grid-stride loop, in double), the block combines its threads'
//      sums (warp shuffles, then shared memory: cuda/block_reduce.cuh shows
//      one way) and thread 0 writes the block's sum to partial[blockIdx.x];
//   2. a second launch, one block, that adds the partial sums;
//   3. copy the result to the host and return it.
//
// x is a device pointer to n floats, already on the GPU. Work on the default
// stream and check every CUDA call (cudaGetLastError after a launch).
#pragma once

#include <cstdint>

namespace exercise {

double sum_v2(const float* x_on_gpu, int64_t n);

}  // namespace exercise
