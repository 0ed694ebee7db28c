// raw_nn.h — neural-network raw ops: the activations (one pass each way)
// and, through tensor/ops/fused_ops.h, the fused ops (LayerNorm, RMSNorm,
// DyT, cross-entropy, the geodesic update, attention, AdamW), one forward
// and one backward kernel each instead of a chain of small ops.
//
// Each fused op lives in tensor/ops/<op>.h and <op>.cpp: its kernels'
// signatures, its checks, its CPU kernels and its differentiable version
// (the CUDA kernels: cuda/<op>.cu). The norms, DyT, cross-entropy and the
// geodesic update work on the last dim ("rows" of length C); leading dims
// are flattened.
#pragma once

#include "tensor/ops/fused_ops.h"
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

}  // namespace raw
}  // namespace nc
