// device_common.cuh — what kernels share and needs no host API: launch
// sizes and small device functions. A kernel header (attention_tiled.cuh,
// reduction_kernels.cuh) includes this and not cuda_common.cuh, so that
// the CPU emulator (tests/cuda_emulator) can compile it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nc {
namespace cuda {

// e^(x - m) for a max-subtracted exponent (softmax, cross-entropy): in
// float for float data, since FP64 runs at 1/32-1/64 of the FP32 rate on
// laptop GPUs and the result is stored as float anyway (expf is accurate
// to 2 ulp); in double for double data. Sums of these stay in double.
__device__ inline double exp_shifted(float x, double m) { return (double)expf((float)((double)x - m)); }
__device__ inline double exp_shifted(double x, double m) { return exp(x - m); }

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill the GPU, each thread then walks
// i, i + gridDim.x * blockDim.x, ...
inline int blocks_for(int64_t n) {
    return (int)std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, 8192));
}

// One block per row (the row kernels: norms, cross-entropy, reductions):
// as many blocks as rows, up to gridDim.x's limit, each then walking rows
// r, r + gridDim.x, ...
inline int row_blocks(int64_t rows) { return (int)std::max<int64_t>(1, std::min<int64_t>(rows, 65535)); }

}  // namespace cuda
}  // namespace nc
