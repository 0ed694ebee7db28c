// attention.h — scaled dot-product attention as a fused op: the kernels
// every backend supplies (tensor/backend.h's Backend::attention), the raw
// ops, and the differentiable op. All defined in attention.cpp (the CUDA
// kernels: cuda/attention.cu).
//
// q: [..., T, D], k: [..., S, D], v: [..., S, Dv] with the same leading dims.
// P = softmax(scale q k^T) over S, with keys j > i masked when causal;
// out = P v: [..., T, Dv]. P itself is never stored (tiled kernels):
// backward rebuilds it from logsumexp [N, T], N the leading dims flattened.
#pragma once

#include "tensor/tensor.h"

namespace nc {

// q: [N, T, D], k: [N, S, D], v: [N, S, Dv], of one float dtype (never
// 16-bit: the raw op widens those) -> out [N, T, Dv], and logsumexp [N, T]
// = log of each softmax row's denominator (in units of the scaled scores),
// all backward needs to rebuild the probabilities tile by tile.
// Forward's q, k, v: each [T, D] or [S, D] matrix contiguous, the matrices
// strides()[0] apart (any distance: the keys of a key/value cache's first
// S positions are read in place). Backward's operands, and every out,
// logsumexp and gradient: contiguous.
struct AttentionKernels {
    void (*forward)(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
                    const Tensor& logsumexp);
    void (*backward)(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                     const Tensor& logsumexp, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                     const Tensor& dv);
};

namespace raw {

struct AttentionForward {
    Tensor out, logsumexp;
};
AttentionForward attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale);
struct AttentionBackward {
    Tensor dq, dk, dv;
};
AttentionBackward attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionForward& saved, bool causal, double scale);

}  // namespace raw

// Differentiable: softmax(scale q k^T + causal mask) v; scale <= 0 means
// 1/sqrt(D). One fused kernel each way.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                    double scale = 0);
// Mixed precision (train --precision): q, k and v rounded to `operand_dtype`
// (bfloat16 or float16), the rest in float32, the 16-bit values kept for
// backward; kFloat32 is the op above.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                                    DType operand_dtype);

// Attention over q, k and v packed side by side in one tensor, as GPT-2's
// one projection makes them: qkv [B, T, 3C] (q, k, v each [B, T, C], C = H D,
// split into `heads` heads) -> [B, T, C], heads merged back; scale
// 1/sqrt(D). The same as narrowing qkv into q, k, v and calling the op
// above, with the gradient of qkv written in one piece.
Tensor packed_qkv_attention(const Tensor& qkv, int64_t heads, bool causal);

}  // namespace nc
