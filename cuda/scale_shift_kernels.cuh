// scale_shift_kernels.cuh — y = x scale + shift per feature on the GPU,
// forward and backward, one thread per element (cuda/scale_shift.cu
// launches them). The formulas are tensor/ops/scale_shift.h's, the same
// functions the CPU loop calls. In a header of their own so that the CPU
// emulator (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: x, y, dy, dx, dy_x [rows, C]; scale, shift [C].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/ops/scale_shift.h"

namespace nc {
namespace cuda {

template <typename T>
__global__ void scale_shift_kernel(const T* x, const T* scale, const T* shift, T* y, int64_t rows, int64_t C) {
    int64_t n = rows * C;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        y[e] = (T)scale_shift_value(x[e], scale[e % C], shift[e % C]);
}

template <typename T>
__global__ void scale_shift_backward_kernel(const T* dy, const T* x, const T* scale, T* dx, T* dy_x, int64_t rows,
                                            int64_t C) {
    int64_t n = rows * C;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        dx[e] = (T)scale_shift_dx(dy[e], scale[e % C]);
        dy_x[e] = dy[e] * x[e];
    }
}

}  // namespace cuda
}  // namespace nc
