// heads_last.h — the layout attention's heads keep between the projections
// and the attention op: a [B, T, H, D] tensor seen as [B, H, T, D].
//
// A projection writes [B, T, C] with C = H D; splitting it into heads is a
// view (reshape to [B, T, H, D], then transpose to [B, H, T, D]), and so is
// merging them back, as long as the ops in between read that view in
// place and give it its gradient in the same layout. Attention
// (attention.cpp) does both and writes its output heads last too; RoPE
// (rope.cpp) reads its input in place and writes the input's gradient
// heads last, its output contiguous. Internal to tensor/ops/ (and to
// bench/attention/attention_time.cpp, which lays GPT-2's operands out the same way).
#pragma once

#include "tensor/raw_ops.h"

namespace nc {

// Whether t [B, H, T, D] is a [B, T, H, D] tensor seen as [B, H, T, D].
inline bool heads_last(const Tensor& t) {
    if (t.dim() != 4) return false;
    const auto& st = t.strides();
    const int64_t H = t.size(1), D = t.size(3);
    return st[3] == 1 && st[1] == D && st[2] == H * D && st[0] == t.size(2) * H * D;
}

// A new [B, H, T, D] tensor (`shape`) stored as [B, T, H, D].
inline Tensor empty_heads_last(const Shape& shape, DType dtype, Device device) {
    return raw::transpose(empty({shape[0], shape[2], shape[1], shape[3]}, dtype, device), 1, 2);
}

}  // namespace nc
