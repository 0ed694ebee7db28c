// dyt.cu — Dynamic Tanh on the GPU, forward and backward; the math is
// tensor/ops/dyt.cpp's. Forward: one thread per element. Backward: one
// block per row, which also sums the row's share of dalpha.
//
// Shapes: x, y, dy, dx [rows, C]; weight, bias [C]; alpha [1].
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

template <typename T>
__global__ void dyt_kernel(const T* x, const T* alpha_ptr, const T* w, const T* b, T* y, int64_t rows, int64_t C) {
    T alpha = *alpha_ptr;
    int64_t n = rows * C;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % C;
        y[e] = w[i] * tanh(alpha * x[e]) + (b ? b[i] : T(0));
    }
}

template <typename T>
__global__ void dyt_backward_kernel(const T* dy, const T* x, const T* alpha_ptr, const T* w, T* dx, T* dy_t,
                                    T* dalpha_rows, int64_t rows, int64_t C) {
    T alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double part = 0;
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            int64_t e = r * C + i;
            T t = tanh(alpha * x[e]);
            T dz = dy[e] * w[i] * (T(1) - t * t);
            dx[e] = alpha * dz;
            dy_t[e] = dy[e] * t;
            part += (double)dz * x[e];
        }
        double total = block_sum(part);
        if (threadIdx.x == 0) dalpha_rows[r] = (T)total;
    }
}


void dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows * C == 0) return;
    if (x.dtype() == kFloat32)
        dyt_kernel<<<blocks_for(rows * C), kThreads, 0, stream()>>>(ptr_or_null<float>(x), ptr_or_null<float>(alpha),
                                                                    ptr_or_null<float>(weight), ptr_or_null<float>(bias),
                                                                    ptr_or_null<float>(out), rows, C);
    else
        dyt_kernel<<<blocks_for(rows * C), kThreads, 0, stream()>>>(ptr_or_null<double>(x), ptr_or_null<double>(alpha),
                                                                    ptr_or_null<double>(weight), ptr_or_null<double>(bias),
                                                                    ptr_or_null<double>(out), rows, C);
    check_launch("dyt_kernel");
}

void dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                  const Tensor& dy_t, const Tensor& dalpha_rows) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        dyt_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dy), ptr_or_null<float>(x), ptr_or_null<float>(alpha), ptr_or_null<float>(weight),
            ptr_or_null<float>(dx), ptr_or_null<float>(dy_t), ptr_or_null<float>(dalpha_rows), rows, C);
    else
        dyt_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dy), ptr_or_null<double>(x), ptr_or_null<double>(alpha), ptr_or_null<double>(weight),
            ptr_or_null<double>(dx), ptr_or_null<double>(dy_t), ptr_or_null<double>(dalpha_rows), rows, C);
    check_launch("dyt_backward_kernel");
}
}  // namespace

void add_dyt(Backend& table) {
    table.dyt = dyt;
    table.dyt_backward = dyt_backward;
}

}  // namespace cuda
}  // namespace nc
