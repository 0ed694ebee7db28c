// dyt.cu — Dynamic Tanh on the GPU, forward and backward: the launches of
// dyt_kernels.cuh's kernels (which explain them).
//
// Shapes: x, y, dy, dx [rows, C]; weight, bias [C]; alpha [1].
#include <cmath>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/dyt_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

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
                  const Tensor& dy_tanh, const Tensor& dalpha_rows) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        dyt_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dy), ptr_or_null<float>(x), ptr_or_null<float>(alpha), ptr_or_null<float>(weight),
            ptr_or_null<float>(dx), ptr_or_null<float>(dy_tanh), ptr_or_null<float>(dalpha_rows), rows, C);
    else
        dyt_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dy), ptr_or_null<double>(x), ptr_or_null<double>(alpha), ptr_or_null<double>(weight),
            ptr_or_null<double>(dx), ptr_or_null<double>(dy_tanh), ptr_or_null<double>(dalpha_rows), rows, C);
    check_launch("dyt_backward_kernel");
}
}  // namespace

void add_dyt(Backend& table) {
    table.dyt = {dyt, dyt_backward};
}

}  // namespace cuda
}  // namespace nc
