// raw_nn.h — fused neural-network kernels as raw ops: one forward and one
// backward kernel each, instead of a chain of small ops. The differentiable
// versions (autograd/ops_nn.h) pair each forward with its backward.
//
// All of them work on the last dim ("rows" of length C); leading dims are
// flattened. Notation per row x in R^C, incoming gradient dy.
#pragma once

#include "tensor/backend.h"  // AdamWStep
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

// ---- LayerNorm -------------------------------------------------------------------
// mu = mean(x), var = mean((x - mu)^2), rstd = 1/sqrt(var + eps),
// xh = (x - mu) rstd, y = gamma xh + beta. gamma/beta may be undefined.
struct NormForward {
    Tensor out;
    Tensor mean;  // [rows] (LayerNorm only)
    Tensor rstd;  // [rows]
};
struct NormBackward {
    Tensor dx, dgamma, dbeta;  // dgamma/dbeta undefined when gamma/beta were
};
NormForward layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);
// gh = dy gamma:  dx = rstd (gh - mean(gh) - xh mean(gh xh)),
// dgamma = sum over rows of dy xh,  dbeta = sum over rows of dy.
NormBackward layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 const NormForward& saved);

// ---- RMSNorm ---------------------------------------------------------------------
// rstd = 1/sqrt(mean(x^2) + eps), y = gamma x rstd.
NormForward rms_norm(const Tensor& x, const Tensor& gamma, double eps);
// xh = x rstd, gh = dy gamma:  dx = rstd (gh - xh mean(gh xh)),  dgamma = sum dy xh.
NormBackward rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormForward& saved);

// ---- softmax + cross-entropy ------------------------------------------------------
// Per row n: loss_n = logsumexp(logits_n) - logits_n[target_n], or 0 when
// target_n == ignore_index. logits: [N, V] (any leading dims flattened).
struct CrossEntropyForward {
    Tensor losses;     // [N]
    Tensor logsumexp;  // [N], saved so backward needs no second pass for the max
};
CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index);
// dlogits_n = dlosses_n (softmax(logits_n) - onehot(target_n)).
Tensor cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                              const CrossEntropyForward& saved, int64_t ignore_index);

// ---- the geodesic update (GeoNorm) ---------------------------------------------------
// Per row, with s = <x,x>, c = <u,x>/s, v = u - c x (the part of u tangent to
// the sphere through x), w = alpha v, q = <w,w>/s (the angle squared):
//   y = C(q) x + S(q) w,   C(q) = cos(sqrt q),  S(q) = sin(sqrt q)/sqrt q.
// y lies on the sphere of radius |x|. Rows with x = 0 fall back to y = x + u.
// alpha: a one-element tensor.
Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha);
struct GeodesicBackward {
    Tensor dx, du;
    Tensor dalpha;  // shape [] (summed over rows)
};
GeodesicBackward geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha);

// ---- Dynamic Tanh (Zhu et al. 2025) ---------------------------------------------------
// y = weight * tanh(alpha x) + bias over the last dim of x, in one pass
// (weight, bias: [C], bias may be undefined; alpha: one element). Backward
// recomputes t = tanh(alpha x) from x, with dz = dy weight (1 - t^2):
//   dx = alpha dz,  dalpha = sum of dz x,  dweight = sum over rows of dy t,
//   dbias = sum over rows of dy.
Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias);
struct DyTBackward {
    Tensor dx, dalpha, dweight, dbias;  // dalpha has alpha's shape; dbias undefined without a bias
};
DyTBackward dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, bool has_bias);

// ---- scaled dot-product attention ------------------------------------------------
// q: [..., T, D], k: [..., S, D], v: [..., S, Dv] with the same leading dims.
// P = softmax(scale q k^T) over S, with keys j > i masked when causal;
// out = P v: [..., T, Dv]. P itself is never stored (tiled kernel,
// tensor/cpu/attention.cpp): backward rebuilds it from logsumexp [N, T],
// N the leading dims flattened.
struct AttentionForward {
    Tensor out, logsumexp;
};
AttentionForward attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale);
struct AttentionBackward {
    Tensor dq, dk, dv;
};
AttentionBackward attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionForward& saved, bool causal, double scale);

// ---- the AdamW update ------------------------------------------------------------
// One fused step over all parameters (formula in tensor/cpu/optimizer_kernels.cpp):
// params, m, v are updated in place and must be contiguous floating tensors
// of one dtype and device; grads[i] has params[i]'s shape.
void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step);

}  // namespace raw
}  // namespace nc
