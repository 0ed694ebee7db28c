// norms.h — normalization layers: LayerNorm, RMSNorm, BatchNorm1d, Dynamic Tanh.
//
// Formulas and constants are written beside each layer below; the chapter
// is tutorials/03-mlp-and-normalization.md. LayerNorm and RMSNorm
// run one fused kernel forward and one backward (autograd/ops_nn.h).
#pragma once


#include "nn/layers.h"

namespace nc {
namespace nn {

// The norms a transformer block can use, behind one interface so a block can
// hold "its norm" without knowing which one it is.
class NormLayer : public Module {
public:
    virtual Tensor forward(const Tensor& x) const = 0;
};

// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim.
class LayerNorm : public NormLayer {
public:
    LayerNorm(int64_t C, double eps = 1e-5, bool affine = true, bool has_bias = true, Options opt = {});
    Tensor forward(const Tensor& x) const override;
    Tensor weight, bias;  // [C]; undefined when !affine (bias also when !has_bias)
    double eps;
};

// y = x / sqrt(mean(x^2) + eps) * weight over the last dim (no centering, no bias).
class RMSNorm : public NormLayer {
public:
    RMSNorm(int64_t C, double eps = 1e-5, bool affine = true, Options opt = {});
    Tensor forward(const Tensor& x) const override;
    Tensor weight;
    double eps;
};

// Per feature c of x: [N, C] or [N, C, L] (PyTorch's layout). Training
// normalizes with the batch's mean and biased variance and updates the
// running statistics (momentum m: r <- (1 - m) r + m stat, with the unbiased
// variance); eval normalizes with the running statistics.
class BatchNorm1d : public Module {
public:
    BatchNorm1d(int64_t C, double eps = 1e-5, double momentum = 0.1, Options opt = {});
    Tensor forward(const Tensor& x);
    Tensor weight, bias, running_mean, running_var, num_batches_tracked;
    double eps, momentum;
};

// Dynamic Tanh (Zhu et al. 2025): y = weight * tanh(alpha * x) + bias, with one
// learnable scalar alpha (initialised to alpha0) and per-channel weight, bias.
class DyT : public NormLayer {
public:
    DyT(int64_t C, double alpha0 = 0.5, bool has_bias = true, Options opt = {});
    Tensor forward(const Tensor& x) const override;
    Tensor alpha, weight, bias;  // alpha: shape [1]; bias undefined when !has_bias

    // For the DyT study's saturation diagnostic (analysis/diagnostics.h):
    // while on, every forward keeps a detached copy of its pre-activation
    // z = alpha x, the argument of tanh. The layer only keeps the values;
    // what to measure on them is the analysis's business.
    void keep_pre_activation(bool on);
    const Tensor& last_pre_activation() const { return last_pre_activation_; }  // undefined until a kept forward ran

private:
    bool keep_ = false;
    mutable Tensor last_pre_activation_;
};

}  // namespace nn
}  // namespace nc
