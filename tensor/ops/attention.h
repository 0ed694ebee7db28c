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

// q: [..., T, D], k: [..., S, D], v: [..., S, Dv] with the same leading
// dims (N matrices in all), of one float dtype (never 16-bit: the raw op
// widens those) -> out [..., T, Dv], and logsumexp [N, T] = log of each
// softmax row's denominator (in units of the scaled scores), all backward
// needs to rebuild the probabilities tile by tile.
// Every operand and output except logsumexp (contiguous) may be a view:
// unit steps along each row (its last dim), the rows strides()[-2] apart,
// and the matrices anywhere (matrix_batch_offsets, tensor/backend.h). So
// attention reads GPT-2's q, k and v where its one projection put them
// ([B, T, 3C] seen as [B, H, T, D]), writes out where the merged heads go
// ([B, T, C] seen as [B, H, T, D]) and its gradients into one d(qkv), and
// reads the first S positions of a key/value cache in place. The CUDA
// kernels do the same for views with up to two leading dims (every model's
// [B, H, T, D]; cuda/attention_strides.cuh).
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
// `out_into`, if given, is the [..., T, Dv] tensor (a view with contiguous
// rows) to write the output into; otherwise a new one is made.
AttentionForward attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                           const Tensor& out_into = Tensor());
struct AttentionBackward {
    Tensor dq, dk, dv;
};
// `into`, if given (all three), holds the tensors to write the gradients
// into, shaped as q, k and v (views with contiguous rows).
AttentionBackward attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionForward& saved, bool causal, double scale,
                                     const AttentionBackward& into = AttentionBackward());

// [..., R, C] -> [batch, heads, R, C], for kernels that find each matrix
// from two strides (CUDA's, cuda/attention_strides.cuh): a view for up to
// two leading dims ([R, C] -> [1, 1, R, C], [N, R, C] -> [1, N, R, C]) and
// for more that merge into two; else a contiguous copy.
Tensor attention_grid(const Tensor& t);

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
// Mixed precision: q, k and v rounded to `operand_dtype` as the op above on
// the three parts rounds them (the same numbers to the last bit); kFloat32
// is the op above.
Tensor packed_qkv_attention(const Tensor& qkv, int64_t heads, bool causal, DType operand_dtype);

}  // namespace nc
