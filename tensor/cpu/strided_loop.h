// strided_loop.h — walking N tensors of the same shape but any strides.
//
// Elementwise kernels must handle views: transposed, sliced, broadcast
// (stride 0). for_each_run hides that: it merges dims that are laid out
// contiguously for every operand (tensor/merged_dims.h; a plain contiguous
// tensor becomes one long run), splits the work into runs along the innermost dim, and hands
// each run to `body` on an OpenMP thread:
//
//   body(offsets, count, steps)
//     offsets[k]: element offset of operand k's first element in this run
//     count:      number of elements in the run
//     steps[k]:   stride of operand k along the run (1 = contiguous)
//
// The body's inner loop is the one the compiler vectorizes, so bodies test for
// steps == 1 and keep a plain loop for that case.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/cpu/parallel.h"
#include "tensor/merged_dims.h"
#include "tensor/shape.h"

namespace nc {
namespace cpu {

// Runs shorter than this are not split further (loops with fewer elements
// than kParallelMin, parallel.h, run on one thread).
constexpr int64_t kRunChunk = 16384;

template <int N, typename Body>
void for_each_run(const Shape& shape, const std::array<const Shape*, N>& strides, Body body) {
    // 1. The dims with size-1 dims dropped and contiguous neighbours merged
    //    (tensor/merged_dims.h); a single element becomes one dim of size 1.
    MergedDims<N> m = merge_dims<N>(shape, strides);
    if (m.empty) return;  // nothing to do
    if (m.ndim == 0) m.ndim = 1, m.sizes[0] = 1;
    int ndim = m.ndim;
    const int64_t* sizes = m.sizes;
    const auto& st = m.strides;

    // 2. The innermost dim is cut into chunks; every (outer index, chunk) is a task.
    int64_t inner = sizes[ndim - 1];
    int64_t chunks = (inner + kRunChunk - 1) / kRunChunk;
    int64_t outer = 1;
    for (int d = 0; d < ndim - 1; ++d) outer *= sizes[d];
    int64_t tasks = outer * chunks;
    std::array<int64_t, N> steps;
    for (int k = 0; k < N; ++k) steps[k] = st[k][ndim - 1];

    // `flatten` inlines the element function into the loop, so the loop
    // vectorizes; GCC's own inlining limits stopped one level short once the
    // loop moved into parallel_for (gelu's forward and backward ran 4x slower).
    parallel_for(tasks, outer * inner >= kParallelMin, [&](int64_t task) __attribute__((flatten)) {
        int64_t chunk = task % chunks, rest = task / chunks;
        std::array<int64_t, N> offsets{};
        // Turn the outer index into an offset per operand, innermost dim first.
        for (int d = ndim - 2; d >= 0; --d) {
            int64_t index = rest % sizes[d];
            rest /= sizes[d];
            for (int k = 0; k < N; ++k) offsets[k] += index * st[k][d];
        }
        int64_t start = chunk * kRunChunk;
        int64_t count = std::min(kRunChunk, inner - start);
        for (int k = 0; k < N; ++k) offsets[k] += start * steps[k];
        body(offsets.data(), count, steps.data());
    });
}

}  // namespace cpu
}  // namespace nc
