// shape.h — shapes, strides and the arithmetic on them.
//
// A shape lists the size of each dimension, outermost first; strides list how
// many *elements* (not bytes) to step in storage to move one index along each
// dimension. A contiguous (row-major) tensor of shape [2, 3, 4] has strides
// [12, 4, 1]. Views change shape/strides/offset and share the storage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nc {

using Shape = std::vector<int64_t>;

// The kernels keep per-dimension counters in fixed arrays of this size.
constexpr int kMaxDims = 8;

std::string shape_str(const Shape& shape);                       // "[2, 3]"
int64_t shape_numel(const Shape& shape);                         // product, 1 for []; throws past 2^63 - 1
Shape contiguous_strides(const Shape& shape);                    // row-major strides
// NumPy broadcasting: align from the right, a size-1 dim stretches.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);
// Turns a possibly negative dim into 0..ndim-1, or throws naming the op.
int64_t normalize_dim(int64_t dim, int64_t ndim, const std::string& op);
void check_ndim(const Shape& shape, const std::string& op);     // <= kMaxDims

}  // namespace nc
