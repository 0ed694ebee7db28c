// attention_strides.cuh — where the attention kernels find their operands,
// which are views (tensor/ops/attention.h): each of q, k, v and out (and,
// backward, dout, dq, dk and dv) is a batch of N = B H matrices [R, C]
// found through a MatrixLayout (tensor/matrix_layout.h): GPT-2's q, k and v
// where its [B, T, 3 C] projection wrote them (row_stride 3 C), its output
// written into [B, T, C] the same way (row_stride C), a key/value cache's
// first S positions, so every operand is read and written where it lies,
// with no copy. Shared by
// attention_tiled.cuh, attention_simple.cuh and the host code in
// attention.cu, which reads the numbers off each tensor's shape and strides
// (matrix_layout_of).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/matrix_layout.h"

namespace nc {
namespace cuda {

// The operands of the forward kernels and of the backward ones.
struct ForwardLayouts {
    MatrixLayout q, k, v, out;
};
struct BackwardLayouts {
    MatrixLayout dout, out, q, k, v, dq, dk, dv;
};

}  // namespace cuda
}  // namespace nc
