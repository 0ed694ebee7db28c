// norms.cpp — LayerNorm and RMSNorm, fused (declared in norms.h): the raw
// ops (argument checks, then one backend call), the differentiable ops
// (each forward recorded with its backward), and the CPU kernels, each
// forward beside its backward. The CUDA kernels are in cuda/norms.cu.
// Derivations: tutorial 3.
//
// Per row x in R^C (the last dim; leading dims are rows), incoming gradient dy:
//
// LayerNorm: mu = mean(x), var = mean((x - mu)^2), rstd = 1/sqrt(var + eps),
//   xh = (x - mu) rstd, y = gamma xh + beta (gamma, beta optional).
//   Backward, gh = dy gamma:  dx = rstd (gh - mean(gh) - xh mean(gh xh)),
//   dgamma = sum over rows of dy xh,  dbeta = sum over rows of dy.
//
// RMSNorm: rstd = 1/sqrt(mean(x^2) + eps), xh = x rstd, y = gamma xh.
//   Backward:  dx = rstd (gh - xh mean(gh xh)),  dgamma = sum over rows of dy xh.
//
// Shapes: x, y, dy, dx [rows, C] (rows = B T, every leading dim); gamma,
// beta [C]; mean, rstd [rows].

#include <cmath>

#include "tensor/ops/rows.h"
#include "tensor/profile.h"
#include "autograd/node.h"
#include "tensor/raw_nn.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

NormForward layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
    Tensor rows = as_rows(x, "layer_norm");
    check_feature_param(gamma, x, "gamma", "layer_norm");
    check_feature_param(beta, x, "beta", "layer_norm");
    NormForward f{empty(x.shape(), x.dtype(), x.device()), empty({rows.size(0)}, x.dtype(), x.device()),
                  empty({rows.size(0)}, x.dtype(), x.device())};
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).layer_norm.forward(rows, gamma, beta, eps, view(f.out, rows.shape()), f.mean, f.rstd);
    return f;
}

NormBackward layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 const NormForward& saved) {
    check_same(dy, x, "gradient and input", "layer_norm_backward");
    Tensor rows = as_rows(x, "layer_norm_backward");
    NormBackward grads;
    grads.dx = empty(x.shape(), x.dtype(), x.device());
    if (gamma.defined()) grads.dgamma = empty(gamma.shape(), x.dtype(), x.device());
    if (beta.defined()) grads.dbeta = empty(beta.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).layer_norm.backward(as_rows(dy, "layer_norm_backward"), rows, gamma, saved.mean,
                                                saved.rstd, view(grads.dx, rows.shape()), grads.dgamma, grads.dbeta);
    return grads;
}

NormForward rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
    Tensor rows = as_rows(x, "rms_norm");
    check_feature_param(gamma, x, "gamma", "rms_norm");
    NormForward f{empty(x.shape(), x.dtype(), x.device()), Tensor(), empty({rows.size(0)}, x.dtype(), x.device())};
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).rms_norm.forward(rows, gamma, eps, view(f.out, rows.shape()), f.rstd);
    return f;
}

NormBackward rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormForward& saved) {
    check_same(dy, x, "gradient and input", "rms_norm_backward");
    Tensor rows = as_rows(x, "rms_norm_backward");
    NormBackward grads;
    grads.dx = empty(x.shape(), x.dtype(), x.device());
    if (gamma.defined()) grads.dgamma = empty(gamma.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).rms_norm.backward(as_rows(dy, "rms_norm_backward"), rows, gamma, saved.rstd,
                                              view(grads.dx, rows.shape()), grads.dgamma);
    return grads;
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

using Grads = std::vector<Tensor>;

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
    raw::NormForward f = raw::layer_norm(x, gamma, beta, eps);
    // The backward needs the statistics, not the output: capturing the output
    // would make it own its own node (a reference cycle that never frees).
    raw::NormForward saved{Tensor(), f.mean, f.rstd};
    // One backward kernel: dx = rstd (gh - mean(gh) - xh mean(gh xh)), gh = dy gamma.
    return record("LayerNorm", f.out, {x, gamma, beta}, [x, gamma, beta, saved](const Tensor& g) {
        raw::NormBackward d = raw::layer_norm_backward(raw::contiguous(g), x, gamma, beta, saved);
        return Grads{d.dx, d.dgamma, d.dbeta};
    });
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
    raw::NormForward f = raw::rms_norm(x, gamma, eps);
    raw::NormForward saved{Tensor(), Tensor(), f.rstd};  // not the output: see layer_norm
    // One backward kernel: dx = rstd (gh - xh mean(gh xh)), gh = dy gamma.
    return record("RmsNorm", f.out, {x, gamma}, [x, gamma, saved](const Tensor& g) {
        raw::NormBackward d = raw::rms_norm_backward(raw::contiguous(g), x, gamma, saved);
        return Grads{d.dx, d.dgamma};
    });
}

// ---- the CPU kernels, forward beside backward ------------------------------------

namespace cpu {

template <typename T>
static void layer_norm_typed(const Tensor& x_t, const Tensor& gamma_t, const Tensor& beta_t, double eps,
                             const Tensor& out_t, const Tensor& mean_t, const Tensor& rstd_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *x = ptr_or_null<T>(x_t), *gamma = ptr_or_null<T>(gamma_t), *beta = ptr_or_null<T>(beta_t);
    T *y = mut_or_null<T>(out_t), *mean = mut_or_null<T>(mean_t), *rstd = mut_or_null<T>(rstd_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * C;
        double mu = 0, var = 0;
        for (int64_t c = 0; c < C; ++c) mu += xr[c];
        mu /= (double)C;
        for (int64_t c = 0; c < C; ++c) var += ((double)xr[c] - mu) * ((double)xr[c] - mu);
        double rs = 1.0 / std::sqrt(var / (double)C + eps);
        mean[r] = (T)mu;
        rstd[r] = (T)rs;
        T* yr = y + r * C;
        for (int64_t c = 0; c < C; ++c) {
            T xh = (T)((xr[c] - mu) * rs);
            yr[c] = (gamma ? gamma[c] * xh : xh) + (beta ? beta[c] : T(0));
        }
    }
}

template <typename T>
static void layer_norm_backward_typed(const Tensor& dy_t, const Tensor& x_t, const Tensor& gamma_t,
                                      const Tensor& mean_t, const Tensor& rstd_t, const Tensor& dx_t,
                                      const Tensor& dgamma_t, const Tensor& dbeta_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *dy = ptr_or_null<T>(dy_t), *x = ptr_or_null<T>(x_t), *gamma = ptr_or_null<T>(gamma_t);
    const T *mean = ptr_or_null<T>(mean_t), *rstd = ptr_or_null<T>(rstd_t);
    T* dx = mut_or_null<T>(dx_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * C, *dyr = dy + r * C;
        double mu = mean[r], rs = rstd[r];
        // gh = dy * gamma; we need mean(gh) and mean(gh * xh).
        double sum_gh = 0, sum_gh_xh = 0;
        for (int64_t c = 0; c < C; ++c) {
            double gh = gamma ? (double)dyr[c] * gamma[c] : (double)dyr[c];
            sum_gh += gh;
            sum_gh_xh += gh * (xr[c] - mu) * rs;
        }
        double mean_gh = sum_gh / (double)C, mean_gh_xh = sum_gh_xh / (double)C;
        for (int64_t c = 0; c < C; ++c) {
            double gh = gamma ? (double)dyr[c] * gamma[c] : (double)dyr[c];
            double xh = (xr[c] - mu) * rs;
            dx[r * C + c] = (T)(rs * (gh - mean_gh - xh * mean_gh_xh));
        }
    }
    affine_param_grads<T>(rows, C, dy, mut_or_null<T>(dgamma_t), mut_or_null<T>(dbeta_t),
                          [&](int64_t r, int64_t c) { return ((double)x[r * C + c] - mean[r]) * rstd[r]; });
}

static void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& rstd) {
    if (x.dtype() == kFloat32) layer_norm_typed<float>(x, gamma, beta, eps, out, mean, rstd);
    else layer_norm_typed<double>(x, gamma, beta, eps, out, mean, rstd);
}

static void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    if (x.dtype() == kFloat32) layer_norm_backward_typed<float>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    else layer_norm_backward_typed<double>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

template <typename T>
static void rms_norm_typed(const Tensor& x_t, const Tensor& gamma_t, double eps, const Tensor& out_t,
                           const Tensor& rstd_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *x = ptr_or_null<T>(x_t), *gamma = ptr_or_null<T>(gamma_t);
    T *y = mut_or_null<T>(out_t), *rstd = mut_or_null<T>(rstd_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * C;
        double ms = 0;
        for (int64_t c = 0; c < C; ++c) ms += (double)xr[c] * xr[c];
        double rs = 1.0 / std::sqrt(ms / (double)C + eps);
        rstd[r] = (T)rs;
        for (int64_t c = 0; c < C; ++c) {
            T xh = (T)(xr[c] * rs);
            y[r * C + c] = gamma ? gamma[c] * xh : xh;
        }
    }
}

template <typename T>
static void rms_norm_backward_typed(const Tensor& dy_t, const Tensor& x_t, const Tensor& gamma_t,
                                    const Tensor& rstd_t, const Tensor& dx_t, const Tensor& dgamma_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *dy = ptr_or_null<T>(dy_t), *x = ptr_or_null<T>(x_t), *gamma = ptr_or_null<T>(gamma_t);
    const T* rstd = ptr_or_null<T>(rstd_t);
    T* dx = mut_or_null<T>(dx_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * C, *dyr = dy + r * C;
        double rs = rstd[r], sum_gh_xh = 0;
        for (int64_t c = 0; c < C; ++c) {
            double gh = gamma ? (double)dyr[c] * gamma[c] : (double)dyr[c];
            sum_gh_xh += gh * xr[c] * rs;
        }
        double mean_gh_xh = sum_gh_xh / (double)C;
        for (int64_t c = 0; c < C; ++c) {
            double gh = gamma ? (double)dyr[c] * gamma[c] : (double)dyr[c];
            dx[r * C + c] = (T)(rs * (gh - xr[c] * rs * mean_gh_xh));
        }
    }
    affine_param_grads<T>(rows, C, dy, mut_or_null<T>(dgamma_t), nullptr,
                          [&](int64_t r, int64_t c) { return (double)x[r * C + c] * rstd[r]; });
}

static void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd) {
    if (x.dtype() == kFloat32) rms_norm_typed<float>(x, gamma, eps, out, rstd);
    else rms_norm_typed<double>(x, gamma, eps, out, rstd);
}

static void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma) {
    if (x.dtype() == kFloat32) rms_norm_backward_typed<float>(dy, x, gamma, rstd, dx, dgamma);
    else rms_norm_backward_typed<double>(dy, x, gamma, rstd, dx, dgamma);
}

void add_layer_norm(Backend& table) { table.layer_norm = {layer_norm, layer_norm_backward}; }
void add_rms_norm(Backend& table) { table.rms_norm = {rms_norm, rms_norm_backward}; }

}  // namespace cpu
}  // namespace nc
