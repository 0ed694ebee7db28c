// merged_dims.h — the fewest dims that walk N same-shaped operands.
//
// An elementwise loop over views (transposed, sliced, broadcast with stride
// 0) must turn each element's index into one offset per operand, a div/mod
// per dim. Most operands are simpler than their shape says: size-1 dims
// step nowhere, and two neighbouring dims d, d+1 can be walked as one
// wherever every operand steps across them as across one dim, that is
// stride[d] == stride[d+1] * size[d+1]. Merging them makes a contiguous
// tensor of any shape one dim. The CPU's for_each_run (cpu/strided_loop.h)
// and the CUDA kernels' StridedIndexer (cuda/cuda_common.cuh) both start here.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/shape.h"

namespace nc {

template <int N>
struct MergedDims {
    bool empty = false;  // some dim has size 0: there is nothing to walk
    int ndim = 0;        // 0: a single element (every dim had size 1)
    int64_t sizes[kMaxDims] = {};
    int64_t strides[N][kMaxDims] = {};
};

template <int N>
MergedDims<N> merge_dims(const Shape& shape, const std::array<const Shape*, N>& strides) {
    MergedDims<N> m;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0) {
            m.empty = true;
            return m;
        }
        if (shape[d] == 1) continue;
        bool merge = m.ndim > 0;
        for (int k = 0; k < N && merge; ++k) merge = m.strides[k][m.ndim - 1] == (*strides[k])[d] * shape[d];
        if (merge) {
            m.sizes[m.ndim - 1] *= shape[d];
            for (int k = 0; k < N; ++k) m.strides[k][m.ndim - 1] = (*strides[k])[d];
        } else {
            m.sizes[m.ndim] = shape[d];
            for (int k = 0; k < N; ++k) m.strides[k][m.ndim] = (*strides[k])[d];
            ++m.ndim;
        }
    }
    return m;
}

}  // namespace nc
