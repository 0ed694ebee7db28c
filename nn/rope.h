// rope.h — rotary position embeddings (Su et al. 2021), Hugging Face's form.
//
// Each head vector of size D is split in halves (x1, x2); position m rotates
// the pair (x1_i, x2_i) by the angle m f_i, f_i = theta^(-2i/D):
//   y = x cos + rotate_half(x) sin,   rotate_half(x) = cat(-x2, x1),
// with cos/sin tables of shape [T, D] built as cat(f, f). Applied to queries
// and keys, it makes q_m . k_n depend on m - n only (a test checks this).
// The rotation itself is one fused op, forward and backward
// (tensor/ops/rope.h); here the tables are built and applied.
#pragma once

#include "autograd/ops.h"

namespace nc {
namespace nn {

struct RopeTables {
    Tensor cos, sin;  // [T, D]
};

RopeTables rope_tables(int64_t T, int64_t D, double theta, DType dtype = kFloat32, Device device = kCPU);
// x: [..., T, D] with T and D matching the tables.
Tensor apply_rope(const Tensor& x, const RopeTables& tables);

}  // namespace nn
}  // namespace nc
