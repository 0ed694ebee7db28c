// norms.h — LayerNorm and RMSNorm as fused ops: the kernels every backend
// supplies (an entry of tensor/backend.h's table each), the raw ops, and
// the differentiable ops. All defined in norms.cpp beside each other (the
// CUDA kernels: cuda/norms.cu). Derivations: tutorial 3.
//
// Per row x of the last dim (leading dims are rows):
//   LayerNorm: y = gamma (x - mean) / sqrt(var + eps) + beta
//   RMSNorm:   y = gamma x / sqrt(mean(x^2) + eps)
// gamma and beta may be undefined (no affine part).
#pragma once

#include "tensor/tensor.h"

namespace nc {

// The backend entries Backend::layer_norm and Backend::rms_norm. x, out,
// dy, dx: contiguous [rows, C]; gamma, beta, dgamma, dbeta: [C] or undefined
// when there is no gamma/beta; mean, rstd: [rows], saved for backward.
struct LayerNormKernels {
    void (*forward)(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                    const Tensor& mean, const Tensor& rstd);
    void (*backward)(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                     const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta);
};
struct RmsNormKernels {
    void (*forward)(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd);
    void (*backward)(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                     const Tensor& dgamma);
};

namespace raw {

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

}  // namespace raw

// Differentiable: normalizes over the last dim. gamma/beta: [C], or undefined for none.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps = 1e-5);

}  // namespace nc
