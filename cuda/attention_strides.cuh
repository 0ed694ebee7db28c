// attention_strides.cuh — where the attention kernels find their operands,
// which are views (tensor/ops/attention.h): each of q, k, v and out (and,
// backward, dout, dq, dk and dv) is a batch of N matrices [R, C], the
// values along a row one step apart, the rows row_stride apart, and the
// matrices in a [N / heads, heads] grid: matrix n starts at
//   (n / heads) batch_stride + (n % heads) head_stride.
// That covers
//   a contiguous [N, R, C] batch:       heads 1, batch_stride R C, row_stride C;
//   the first S positions of a key/value cache [B, H, capacity, D]:
//                                       heads H, batch_stride H capacity D, head_stride capacity D, row_stride D;
//   GPT-2's q, k and v, the heads of its [B, T, 3 C] projection seen as
//   [B, H, T, D], and its output written into [B, T, C] the same way:
//                                       heads H, batch_stride 3 T C, head_stride D, row_stride 3 C
//                                       (T C, D and C for the output),
// so every operand is read and written where it lies, with no copy.
// Shared by attention_tiled.cuh, attention_simple.cuh and the host code in
// attention.cu, which reads the numbers off each tensor's shape and strides.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nc {
namespace cuda {

struct MatrixLayout {
    int64_t heads, batch_stride, head_stride, row_stride;  // heads >= 1
    // The element offset of matrix n's first row.
    __host__ __device__ int64_t matrix(int64_t n) const { return n / heads * batch_stride + n % heads * head_stride; }
};

// A contiguous [N, rows, width] batch.
__host__ __device__ inline MatrixLayout contiguous_layout(int64_t rows, int64_t width) {
    return {1, rows * width, 0, width};
}

// The operands of the forward kernels and of the backward ones.
struct ForwardLayouts {
    MatrixLayout q, k, v, out;
};
struct BackwardLayouts {
    MatrixLayout dout, out, q, k, v, dq, dk, dv;
};

}  // namespace cuda
}  // namespace nc
