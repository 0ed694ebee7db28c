// rope.cu — rotary position embeddings on the GPU: the launches of
// rope_kernels.cuh's kernels, and the op's entry of the CUDA table (add_rope).
//
// Shapes: x, y, dy, dx [rows, D] with rows = N T, or [B, H, T, D] views
// (each with its MatrixLayout, tensor/matrix_layout.h; rope_layout in tensor/ops/rope.h); cos, sin [T, D].
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/rope_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

template <typename T>
void forward_typed(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
    const int64_t D = x.size(-1), rows = x.numel() / D, T_ = cos.size(0);
    rope_kernel<<<blocks_for(rows * D / 2), kThreads, 0, stream()>>>(
        ptr_or_null<T>(x), ptr_or_null<T>(cos), ptr_or_null<T>(sin), ptr_or_null<T>(out), rows, D, T_,
        rope_layout(x, T_), rope_layout(out, T_));
    check_launch("rope_kernel");
}

template <typename T>
void backward_typed(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx) {
    const int64_t D = dy.size(-1), rows = dy.numel() / D, T_ = cos.size(0);
    rope_backward_kernel<<<blocks_for(rows * D / 2), kThreads, 0, stream()>>>(
        ptr_or_null<T>(dy), ptr_or_null<T>(cos), ptr_or_null<T>(sin), ptr_or_null<T>(dx), rows, D, T_,
        rope_layout(dy, T_), rope_layout(dx, T_));
    check_launch("rope_backward_kernel");
}

void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
    if (x.numel() == 0) return;
    if (x.dtype() == kFloat32) forward_typed<float>(x, cos, sin, out);
    else forward_typed<double>(x, cos, sin, out);
}

void rope_backward(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx) {
    if (dy.numel() == 0) return;
    if (dy.dtype() == kFloat32) backward_typed<float>(dy, cos, sin, dx);
    else backward_typed<double>(dy, cos, sin, dx);
}

}  // namespace

void add_rope(Backend& table) { table.rope = {rope, rope_backward}; }

}  // namespace cuda
}  // namespace nc
