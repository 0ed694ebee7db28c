// scale_shift.cu — y = x scale + shift per feature on the GPU: the launches
// of scale_shift_kernels.cuh's kernels, and the op's entry of the CUDA
// table (add_scale_shift).
//
// Shapes: x, y, dy, dx, dy_x [rows, C]; scale, shift [C].
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/scale_shift_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

template <typename T>
void forward_typed(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& out) {
    int64_t rows = x.size(0), C = x.size(1);
    scale_shift_kernel<<<blocks_for(rows * C), kThreads, 0, stream()>>>(
        ptr_or_null<T>(x), ptr_or_null<T>(scale), ptr_or_null<T>(shift), ptr_or_null<T>(out), rows, C);
    check_launch("scale_shift_kernel");
}

template <typename T>
void backward_typed(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& dx, const Tensor& dy_x) {
    int64_t rows = x.size(0), C = x.size(1);
    scale_shift_backward_kernel<<<blocks_for(rows * C), kThreads, 0, stream()>>>(
        ptr_or_null<T>(dy), ptr_or_null<T>(x), ptr_or_null<T>(scale), ptr_or_null<T>(dx), ptr_or_null<T>(dy_x), rows, C);
    check_launch("scale_shift_backward_kernel");
}

void scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& out) {
    if (x.numel() == 0) return;
    if (x.dtype() == kFloat32) forward_typed<float>(x, scale, shift, out);
    else forward_typed<double>(x, scale, shift, out);
}

void scale_shift_backward(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& dx, const Tensor& dy_x) {
    if (x.numel() == 0) return;
    if (x.dtype() == kFloat32) backward_typed<float>(dy, x, scale, dx, dy_x);
    else backward_typed<double>(dy, x, scale, dx, dy_x);
}

}  // namespace

void add_scale_shift(Backend& table) { table.scale_shift = {scale_shift, scale_shift_backward}; }

}  // namespace cuda
}  // namespace nc
