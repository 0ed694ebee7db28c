// rope_kernels.cuh — rotary position embeddings on the GPU, forward and
// backward, one thread per pair of channels (cuda/rope.cu launches them).
// The formulas are tensor/ops/rope.h's, the same functions the CPU loop
// calls. In a header of their own so that the CPU emulator
// (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: x, y, dy, dx [rows, D] with row r at position r % T, or [B, H, T, D]
// views (their MatrixLayout); cos, sin [T, D].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/ops/rope.h"

namespace nc {
namespace cuda {

// Pair p = (row r, channel i < h): channels i and i + h of row r, which
// lies where rope_row_start says (tensor/ops/rope.h), in x by x's layout
// and in y by y's.
template <typename T>
__global__ void rope_kernel(const T* x, const T* cos, const T* sin, T* y, int64_t rows, int64_t D, int64_t T_,
                            MatrixLayout x_at, MatrixLayout y_at) {
    const int64_t h = D / 2, pairs = rows * h;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = p / h, i = p % h, t = (r % T_) * D + i;
        const int64_t in = rope_row_start(x_at, T_, r) + i, out = rope_row_start(y_at, T_, r) + i;
        const T first = x[in], second = x[in + h];
        y[out] = rope_first(first, second, cos[t], sin[t]);
        y[out + h] = rope_second(second, first, cos[t + h], sin[t + h]);
    }
}

template <typename T>
__global__ void rope_backward_kernel(const T* dy, const T* cos, const T* sin, T* dx, int64_t rows, int64_t D,
                                     int64_t T_, MatrixLayout dy_at, MatrixLayout dx_at) {
    const int64_t h = D / 2, pairs = rows * h;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = p / h, i = p % h, t = (r % T_) * D + i;
        const int64_t in = rope_row_start(dy_at, T_, r) + i, out = rope_row_start(dx_at, T_, r) + i;
        const T first = dy[in], second = dy[in + h];
        dx[out] = rope_first_dx(first, second, cos[t], sin[t + h]);
        dx[out + h] = rope_second_dx(second, first, cos[t + h], sin[t]);
    }
}

}  // namespace cuda
}  // namespace nc
