// strided_indexer.cuh — the elementwise kernels' map from an output
// element's linear index to one offset per operand, for views of any
// layout (cuda/elementwise_kernels.cuh). Host code builds it from tensors
// (make_indexer); kernels get it by value. Needs no CUDA host API, so the
// CPU emulator (tests/cuda_emulator) compiles it too.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "tensor/backend.h"
#include "tensor/merged_dims.h"

namespace nc {
namespace cuda {

// Offsets of element `linear` (row-major over `sizes`) in each of N operands
// with their own strides: a tensor view of any layout, including broadcast
// (stride 0). Passed to kernels by value. make_indexer merges the dims first
// (tensor/merged_dims.h), so a contiguous operand has one dim and costs no
// div/mod at all (the outermost dim never needs one); when the element
// count fits in 31 bits, the div/mods run in 32-bit arithmetic, several
// times faster than 64-bit on a GPU. The offsets themselves stay 64-bit (a
// small view may sit far into a large buffer).
template <int N>
struct StridedIndexer {
    int ndim;
    bool narrow;  // every linear index < 2^31
    int64_t sizes[kMaxDims];
    int64_t strides[N][kMaxDims];

    __device__ void offsets(int64_t linear, int64_t* out) const {
        for (int k = 0; k < N; ++k) out[k] = 0;
        if (narrow) {
            uint32_t rest = (uint32_t)linear;
            for (int d = ndim - 1; d > 0; --d) {
                uint32_t size = (uint32_t)sizes[d], index = rest % size;
                rest /= size;
                for (int k = 0; k < N; ++k) out[k] += (int64_t)index * strides[k][d];
            }
            linear = rest;
        } else {
            for (int d = ndim - 1; d > 0; --d) {
                int64_t index = linear % sizes[d];
                linear /= sizes[d];
                for (int k = 0; k < N; ++k) out[k] += index * strides[k][d];
            }
        }
        if (ndim > 0)  // dim 0 takes what is left: no div/mod
            for (int k = 0; k < N; ++k) out[k] += linear * strides[k][0];
    }
};

template <int N>
StridedIndexer<N> make_indexer(const Shape& shape, const std::array<const Tensor*, N>& operands) {
    std::array<const Shape*, N> strides;
    for (int k = 0; k < N; ++k) strides[k] = &operands[k]->strides();
    MergedDims<N> m = merge_dims<N>(shape, strides);
    StridedIndexer<N> ix{};
    ix.ndim = m.empty ? 0 : m.ndim;  // empty: no element is ever asked for
    int64_t count = 1;
    for (int d = 0; d < ix.ndim; ++d) {
        ix.sizes[d] = m.sizes[d];
        count *= m.sizes[d];
        for (int k = 0; k < N; ++k) ix.strides[k][d] = m.strides[k][d];
    }
    ix.narrow = count < (int64_t(1) << 31);
    return ix;
}

}  // namespace cuda
}  // namespace nc
