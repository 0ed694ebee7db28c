// ops_nn.h — differentiable neural-network ops: activations and the fused
// kernels (LayerNorm, RMSNorm, DyT, cross-entropy, the geodesic update), each
// with a hand-derived backward pass (ops_nn.cpp; the math and the kernels of
// each op: its file in tensor/ops/).
#pragma once

#include "autograd/ops.h"
#include "tensor/raw_nn.h"

namespace nc {

Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);  // x * sigmoid(x), Llama's SwiGLU gate
Tensor swiglu(const Tensor& gate, const Tensor& up);  // silu(gate) * up in one op (fused forward and backward)
// GELU; tanh_approximation = true is GPT-2's 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).
Tensor gelu(const Tensor& x, bool tanh_approximation = true);

// Normalizes over the last dim. gamma/beta: [C], or undefined for none.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps = 1e-5);

// Mean cross-entropy of logits [..., V] against int64 targets [...], over the
// rows whose target is not ignore_index (0 if every row is ignored).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100);

// The geodesic update y = exp_x(alpha P_x(u)) on the sphere of radius |x|,
// row by row over the last dim (tensor/ops/geodesic_update.cpp). alpha is a one-element
// tensor; it gets a gradient when it requires grad.
Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha);

// Dynamic Tanh, weight * tanh(alpha x) + bias over the last dim, as one fused
// op each way (tensor/ops/dyt.cpp). alpha: one element; bias may be undefined.
Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias);

// softmax(scale q k^T + causal mask) v for q [..., T, D], k [..., S, D],
// v [..., S, Dv]; scale <= 0 means 1/sqrt(D). One fused kernel each way.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                    double scale = 0);

// Zeroes each element with probability p and scales the rest by 1/(1 - p),
// so the expected value is unchanged. Identity when !training or p == 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());

}  // namespace nc
