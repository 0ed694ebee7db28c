// rope_kernels.cuh — rotary position embeddings on the GPU, forward and
// backward, one thread per pair of channels (cuda/rope.cu launches them).
// The formulas are tensor/ops/rope.h's, the same functions the CPU loop
// calls. In a header of their own so that the CPU emulator
// (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: x, y, dy, dx [rows, D] with row r at position r % T; cos, sin [T, D].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/ops/rope.h"

namespace nc {
namespace cuda {

// Pair p = (row r, channel i < h): channels i and i + h of row r.
template <typename T>
__global__ void rope_kernel(const T* x, const T* cos, const T* sin, T* y, int64_t rows, int64_t D, int64_t T_) {
    const int64_t h = D / 2, pairs = rows * h;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = p / h, i = p % h, e = r * D + i, t = (r % T_) * D + i;
        const T first = x[e], second = x[e + h];
        y[e] = rope_first(first, second, cos[t], sin[t]);
        y[e + h] = rope_second(second, first, cos[t + h], sin[t + h]);
    }
}

template <typename T>
__global__ void rope_backward_kernel(const T* dy, const T* cos, const T* sin, T* dx, int64_t rows, int64_t D,
                                     int64_t T_) {
    const int64_t h = D / 2, pairs = rows * h;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = p / h, i = p % h, e = r * D + i, t = (r % T_) * D + i;
        const T first = dy[e], second = dy[e + h];
        dx[e] = rope_first_dx(first, second, cos[t], sin[t + h]);
        dx[e + h] = rope_second_dx(second, first, cos[t + h], sin[t]);
    }
}

}  // namespace cuda
}  // namespace nc
