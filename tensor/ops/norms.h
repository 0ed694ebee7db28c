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

#include <cmath>

#include "tensor/host_device.h"
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

// ---- the formulas, written once for the CPU loops and the CUDA kernels ------------
//
// One row of C values, after the backend has summed over it (a loop on the
// CPU, a block reduction on the GPU). RMSNorm is LayerNorm without the
// centring: mean mu = 0 and no mean(gh) term, which is how both backends
// run it (one backward for both).
//   rstd = 1 / sqrt(sum of (x - mu)^2 / C + eps),   xh = (x - mu) rstd
//   y = gamma xh + beta                        (gamma, beta optional)
//   gh = dy gamma,  dx = rstd (gh - mean(gh) - xh mean(gh xh))
//   dgamma = sum over rows of dy xh,  dbeta = sum over rows of dy
NC_HOST_DEVICE inline double norm_rstd(double sum_of_squares, int64_t C, double eps) {
    return 1.0 / sqrt(sum_of_squares / (double)C + eps);
}
NC_HOST_DEVICE inline double norm_xh(double x, double mu, double rstd) { return (x - mu) * rstd; }
template <typename T>
NC_HOST_DEVICE inline T norm_output(T xh, const T* gamma, const T* beta, int64_t c) {
    return (gamma ? gamma[c] * xh : xh) + (beta ? beta[c] : T(0));
}
template <typename T>
NC_HOST_DEVICE inline double norm_gh(T dy, const T* gamma, int64_t c) {
    return gamma ? (double)dy * gamma[c] : (double)dy;
}
// gh xh, summed over the row for mean(gh xh) (and, as dy xh, over rows for dgamma).
NC_HOST_DEVICE inline double norm_gh_xh(double gh, double x, double mu, double rstd) { return gh * (x - mu) * rstd; }
NC_HOST_DEVICE inline double norm_dx(double rstd, double gh, double mean_gh, double xh, double mean_gh_xh) {
    return rstd * (gh - mean_gh - xh * mean_gh_xh);
}

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
