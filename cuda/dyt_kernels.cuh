// dyt_kernels.cuh — Dynamic Tanh kernels, forward and backward
// (cuda/dyt.cu launches them; the formulas are tensor/ops/dyt.h's, the very
// functions the CPU loops call). Forward:
// one thread per element. Backward: one block per row, which also sums the
// row's share of dalpha. In a header of their own so that the CPU emulator
// (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: x, y, dy, dx [rows, C]; weight, bias [C]; alpha [1].
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "tensor/ops/dyt.h"  // the formulas, shared with the CPU

namespace nc {
namespace cuda {

template <typename T>
__global__ void dyt_kernel(const T* x, const T* alpha_ptr, const T* w, const T* b, T* y, int64_t rows, int64_t C) {
    T alpha = *alpha_ptr;
    int64_t n = rows * C;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % C;
        y[e] = dyt_value<T>(tanh(alpha * x[e]), w[i], b ? b[i] : T(0));
    }
}

template <typename T>
__global__ void dyt_backward_kernel(const T* dy, const T* x, const T* alpha_ptr, const T* w, T* dx, T* dy_tanh,
                                    T* dalpha_rows, int64_t rows, int64_t C) {
    T alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double part = 0;
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            int64_t e = r * C + i;
            T t = tanh(alpha * x[e]);
            T dz = dyt_dz<T>(dy[e], w[i], t);
            dx[e] = alpha * dz;
            dy_tanh[e] = dy[e] * t;
            part += (double)dz * x[e];
        }
        double total = block_sum(part);
        if (threadIdx.x == 0) dalpha_rows[r] = (T)total;
    }
}

}  // namespace cuda
}  // namespace nc
