// matrix_layout.h — where the matrices of a batch of views lie, for the
// kernels that read views in place instead of copying them into blocks:
// the CUDA attention kernels, and RoPE's CPU loop and CUDA kernels.
//
// A batch of N matrices [R, C], the values along a row one step apart, the
// rows row_stride apart, and the matrices in a [N / heads, heads] grid:
// matrix n starts at
//   (n / heads) batch_stride + (n % heads) head_stride.
// That covers
//   a contiguous [N, R, C] batch:       heads 1, batch_stride R C, row_stride C;
//   a [B, T, C] projection split into H heads of D channels, [B, T, H, D]
//   seen as [B, H, T, D]:               heads H, batch_stride T C, head_stride D, row_stride C;
//   GPT-2's q, k and v, the heads of its [B, T, 3 C] projection:
//                                       heads H, batch_stride 3 T C, head_stride D, row_stride 3 C;
//   the first S positions of a key/value cache [B, H, capacity, D]:
//                                       heads H, batch_stride H capacity D, head_stride capacity D, row_stride D.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/host_device.h"
#include "tensor/tensor.h"

namespace nc {

struct MatrixLayout {
    int64_t heads, batch_stride, head_stride, row_stride;  // heads >= 1
    // The element offset of matrix n's first row.
    NC_HOST_DEVICE int64_t matrix(int64_t n) const { return n / heads * batch_stride + n % heads * head_stride; }
};

// A contiguous [N, rows, width] batch.
NC_HOST_DEVICE inline MatrixLayout contiguous_layout(int64_t rows, int64_t width) {
    return {1, rows * width, 0, width};
}

// A [batch, heads, R, C] tensor's layout, read off its strides (its values
// along a row must be one step apart).
inline MatrixLayout matrix_layout_of(const Tensor& t) {
    return {std::max<int64_t>(1, t.size(1)), t.strides()[0], t.strides()[1], t.strides()[2]};
}

}  // namespace nc
