// ops_nn.h — differentiable neural-network ops: activations and dropout
// (ops_nn.cpp), and the fused ops (LayerNorm, RMSNorm, DyT, cross-entropy,
// the geodesic update, attention), each with a hand-derived backward pass
// beside its forward in tensor/ops/<op>.cpp (declared in tensor/ops/<op>.h,
// included here through raw_nn.h).
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

// Zeroes each element with probability p and scales the rest by 1/(1 - p),
// so the expected value is unchanged. Identity when !training or p == 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());

}  // namespace nc
