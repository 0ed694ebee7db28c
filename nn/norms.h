// norms.h — normalization layers: LayerNorm, RMSNorm, BatchNorm1d, Dynamic Tanh.
//
// Formulas and constants are written beside each layer below; their sources
// are in tutorials/reference.md, section 1; the chapter is
// tutorials/03-mlp-and-normalization.md. LayerNorm and RMSNorm
// run one fused kernel forward and one backward (autograd/ops_nn.h).
#pragma once

#include <cmath>

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

// Where tanh is "flat": |alpha x| > 2 (tanh(2) = 0.964), the DyT study's
// saturation threshold, used by every saturation measurement by default.
constexpr double kDytSaturationThreshold = 2.0;

// Dynamic Tanh (Zhu et al. 2025): y = weight * tanh(alpha * x) + bias, with one
// learnable scalar alpha (initialised to alpha0) and per-channel weight
// (initialised to gamma0, 1 in the paper) and bias.
class DyT : public NormLayer {
public:
    DyT(int64_t C, double alpha0 = 0.5, bool has_bias = true, Options opt = {}, double gamma0 = 1);
    Tensor forward(const Tensor& x) const override;
    Tensor alpha, weight, bias;  // alpha: shape [1]; bias undefined when !has_bias

    // Saturation tracking (the DyT study's diagnostic, read by
    // analysis/diagnostics.h and train --diagnostics): while on, every
    // forward records the fraction of its pre-activations z = alpha x with
    // |z| > threshold, the flat part of tanh (dyt_saturation below).
    void track_saturation(bool on, double threshold = kDytSaturationThreshold);
    double last_saturation() const { return last_saturation_; }  // NaN until a tracked forward ran

private:
    bool track_ = false;
    double threshold_ = kDytSaturationThreshold;
    mutable double last_saturation_ = NAN;
};

// DyT saturation: the fraction of pre-activation values z = alpha x with
// |z| > threshold, computed on z's own device; only the one number comes back.
double dyt_saturation(const Tensor& pre_activation, double threshold = kDytSaturationThreshold);

}  // namespace nn
}  // namespace nc
