// raw_nn.h — fused neural-network kernels as raw ops: one forward and one
// backward kernel each, instead of a chain of small ops. The differentiable
// versions (autograd/ops_nn.h) pair each forward with its backward.
//
// Each op lives in one file of tensor/ops/ with its math, its checks and
// its CPU kernels (the CUDA kernels: the file of the same name in cuda/).
// The norms, DyT, cross-entropy and the geodesic update work on the last
// dim ("rows" of length C); leading dims are flattened.
#pragma once

#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

// ---- activations (elementwise; see tensor/cpu/elementwise.cpp) ---------------
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approximation);
// grad * f'(x) for the activations above, in one pass (their backward).
Tensor relu_backward(const Tensor& x, const Tensor& grad);
Tensor silu_backward(const Tensor& x, const Tensor& grad);
Tensor gelu_backward(const Tensor& x, const Tensor& grad, bool tanh_approximation);
// silu(gate) * up in one pass: Llama's gated MLP.
Tensor swiglu(const Tensor& gate, const Tensor& up);

// ---- LayerNorm and RMSNorm (tensor/ops/norms.cpp) ----------------------------------
// LayerNorm: y = gamma (x - mean) / sqrt(var + eps) + beta; RMSNorm:
// y = gamma x / sqrt(mean(x^2) + eps). gamma/beta may be undefined.
struct NormForward {
    Tensor out;
    Tensor mean;  // [rows] (LayerNorm only)
    Tensor rstd;  // [rows]
};
struct NormBackward {
    Tensor dx, dgamma, dbeta;  // dgamma/dbeta undefined when gamma/beta were
};
NormForward layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);
NormBackward layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 const NormForward& saved);

NormForward rms_norm(const Tensor& x, const Tensor& gamma, double eps);
NormBackward rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormForward& saved);

// ---- softmax + cross-entropy (tensor/ops/cross_entropy.cpp) -----------------------
// Per row n: loss_n = logsumexp(logits_n) - logits_n[target_n], or 0 when
// target_n == ignore_index. logits: [N, V] (any leading dims flattened).
struct CrossEntropyForward {
    Tensor losses;     // [N]
    Tensor logsumexp;  // [N], saved so backward needs no second pass for the max
};
CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index);
Tensor cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                              const CrossEntropyForward& saved, int64_t ignore_index);

// ---- the geodesic update (GeoNorm; tensor/ops/geodesic_update.cpp) ------------------
// Each row x moves on its sphere along u's tangent part, by the exponential
// map with step alpha (a one-element tensor); y has x's norm.
Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha);
struct GeodesicBackward {
    Tensor dx, du;
    Tensor dalpha;  // shape [] (summed over rows)
};
GeodesicBackward geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha);

// ---- Dynamic Tanh (Zhu et al. 2025; tensor/ops/dyt.cpp) ------------------------------
// y = weight * tanh(alpha x) + bias over the last dim of x (weight, bias:
// [C], bias may be undefined; alpha: one element).
Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias);
struct DyTBackward {
    Tensor dx, dalpha, dweight, dbias;  // dalpha has alpha's shape; dbias undefined without a bias
};
DyTBackward dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, bool has_bias);

// ---- scaled dot-product attention (tensor/ops/attention.cpp) -------------------------
// q: [..., T, D], k: [..., S, D], v: [..., S, Dv] with the same leading dims.
// P = softmax(scale q k^T) over S, with keys j > i masked when causal;
// out = P v: [..., T, Dv]. P itself is never stored (tiled kernels):
// backward rebuilds it from logsumexp [N, T], N the leading dims flattened.
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
}  // namespace nc
