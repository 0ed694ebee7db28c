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

#include <algorithm>
#include <array>
#include <cstdint>

#include "tensor/cpu/parallel.h"
#include "tensor/merged_dims.h"
#include "tensor/shape.h"

namespace nc {
namespace cpu {

// Runs longer than this are split into chunks of this many elements; the
// runs of shorter ones are grouped, as many whole runs as make about this
// many elements, into one task (loops with fewer elements than
// kParallelMin, parallel.h, run on one thread). So a tensor gets about
// numel / kRunChunk tasks either way: 4 for 64K elements, which keeps 4
// threads busy but not 16, as for a contiguous tensor.
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

    // 2. The runs along the innermost dim, one per outer index: a long run
    //    is cut into chunks, one task each; short runs are grouped, `group`
    //    consecutive runs per task.
    int64_t inner = sizes[ndim - 1];
    int64_t chunks = (inner + kRunChunk - 1) / kRunChunk;
    int64_t group = chunks == 1 ? std::max<int64_t>(1, kRunChunk / inner) : 1;
    int64_t outer = 1;
    for (int d = 0; d < ndim - 1; ++d) outer *= sizes[d];
    int64_t tasks = chunks == 1 ? (outer + group - 1) / group : outer * chunks;
    std::array<int64_t, N> steps;
    for (int k = 0; k < N; ++k) steps[k] = st[k][ndim - 1];

    // `flatten` inlines the element function into the loop, so the loop
    // vectorizes; GCC's own inlining limits stopped one level short once the
    // loop moved into parallel_for (gelu's forward and backward ran 4x slower).
    parallel_for(tasks, outer * inner >= kParallelMin, [&](int64_t task) __attribute__((flatten)) {
        int64_t chunk = chunks == 1 ? 0 : task % chunks;
        int64_t first = chunks == 1 ? task * group : task / chunks;  // the task's first outer index
        int64_t last = std::min(outer, first + group);
        // The first run's outer index, one index per dim, and its offset per
        // operand (a division per dim; the runs after it step along).
        int64_t index[kMaxDims] = {};
        std::array<int64_t, N> offsets{};
        int64_t rest = first;
        for (int d = ndim - 2; d >= 0; --d) {
            index[d] = rest % sizes[d];
            rest /= sizes[d];
            for (int k = 0; k < N; ++k) offsets[k] += index[d] * st[k][d];
        }
        int64_t start = chunk * kRunChunk;
        int64_t count = std::min(kRunChunk, inner - start);
        for (int k = 0; k < N; ++k) offsets[k] += start * steps[k];
        for (int64_t run = first; run < last; ++run) {
            body(offsets.data(), count, steps.data());
            // The next outer index, like an odometer: the innermost outer dim
            // steps by one, and a dim that wraps carries into the one before.
            for (int d = ndim - 2; d >= 0; --d) {
                for (int k = 0; k < N; ++k) offsets[k] += st[k][d];
                if (++index[d] < sizes[d]) break;
                for (int k = 0; k < N; ++k) offsets[k] -= sizes[d] * st[k][d];
                index[d] = 0;
            }
        }
    });
}

}  // namespace cpu
}  // namespace nc
