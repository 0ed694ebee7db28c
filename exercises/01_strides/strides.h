// Exercise 1 (chapter 1): what a view's shape, strides and offset mean.
//
// A tensor is a flat storage and a view of it: element (i0, i1, ..., ik)
// lives at
//
//     offset + i0 strides[0] + i1 strides[1] + ... + ik strides[k]
//
// Write the three functions below from that formula alone, without tensors:
//   element_offset       the storage position of one element of a view;
//   contiguous_strides   the strides of a fresh row-major tensor: the last
//                        dim's is 1, each earlier one the product of the
//                        sizes after it ([2, 3, 4] -> [12, 4, 1]);
//   is_contiguous        whether a view walks its storage in row-major order
//                        with no gaps: its strides are the contiguous ones,
//                        except that the stride of a size-1 dim never
//                        matters (its only index is 0).
//
// The check builds real views (transpose, permute, narrow, expand) and
// compares your answers with what the library reads and says for each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace exercise {

using Sizes = std::vector<int64_t>;

int64_t element_offset(const Sizes& strides, int64_t offset, const Sizes& index);
Sizes contiguous_strides(const Sizes& shape);
bool is_contiguous(const Sizes& shape, const Sizes& strides);

}  // namespace exercise
