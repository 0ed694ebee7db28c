// norms.cpp — LayerNorm and RMSNorm, fused (declared in norms.h): the raw
// ops (argument checks, then one backend call), the differentiable ops
// (each forward recorded with its backward), and the CPU kernels, each
// forward beside its backward. The CUDA kernels are in cuda/norms.cu.
// Derivations: tutorial 3.
//
// The formulas per row and per element are norms.h's, shared with the CUDA
// kernels; RMSNorm runs through the same kernels with mean mu = 0.
//
// Shapes: x, y, dy, dx [rows, C] (rows = B T, every leading dim); gamma,
// beta [C]; mean, rstd [rows].

#include <algorithm>
#include <cmath>

#include "autograd/node.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/ops/norms.h"
#include "tensor/ops/rows.h"
#include "tensor/profile.h"
#include "tensor/raw_ops.h"

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

// Every sum along a row (the mean, the sum of squared deviations, the
// backward's two sums) runs in kSumLanes running sums (fast_math.h). Before,
// the means of 8 rows ran side by side, one chain each, and the other sums
// in one running sum, each addition waiting for the one before, which left
// the CPU idle most of the time: [1024, 256] (the tiny model's LayerNorm)
// took 136-147 us forward and 184-198 us backward on 2 threads, in lanes
// 71-75 and 104-113 us (bench/results/norm-sum-lanes-2026-12-06.txt). The
// 8 rows side by side were not taken further: the compiler fused a multiply
// and an add into one instruction in the 8-row loop but not in the one-row
// loop, and a row's float64 bits depended on its neighbours. The backward's
// loop is written with and without gamma so that each is a plain loop the
// compiler turns into vector code (with the test inside, the backward ran
// slower than one running sum).

// The sum of (x_c - mu)^2 over a row.
template <typename T>
double row_sum_of_squares(const T* x, int64_t C, double mu) {
    double sq = 0;
#pragma omp simd simdlen(kSumLanes) reduction(+ : sq)
    for (int64_t c = 0; c < C; ++c) sq += ((double)x[c] - mu) * ((double)x[c] - mu);
    return sq;
}

// One forward and one backward for both norms: `mean` is null for RMSNorm
// (mu = 0, the formulas of norms.h).
template <typename T>
static void norm_forward_typed(const Tensor& x_tensor, const Tensor& gamma_tensor, const Tensor& beta_tensor,
                               double eps, const Tensor& out_tensor, const Tensor& mean_tensor,
                               const Tensor& rstd_tensor) {
    int64_t rows = x_tensor.size(0), C = x_tensor.size(1);
    const T *x = ptr_or_null<T>(x_tensor), *gamma = ptr_or_null<T>(gamma_tensor), *beta = ptr_or_null<T>(beta_tensor);
    T *y = mut_or_null<T>(out_tensor), *mean = mut_or_null<T>(mean_tensor), *rstd = mut_or_null<T>(rstd_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * C >= kParallelMin, [&](int64_t r) {
        const T* xr = x + r * C;
        const double mu = mean ? sum_in_double(xr, C) / (double)C : 0.0;  // 0 for RMSNorm
        const double rs = norm_rstd(row_sum_of_squares(xr, C, mu), C, eps);
        if (mean) mean[r] = (T)mu;
        rstd[r] = (T)rs;
        for (int64_t c = 0; c < C; ++c) y[r * C + c] = norm_output((T)norm_xh(xr[c], mu, rs), gamma, beta, c);
    });
}

// The backward's two sums over a row: of gh, and of gh xh.
template <typename T>
void row_gradient_sums(const T* dy, const T* x, const T* gamma, int64_t C, double mu, double rs, double& sum_gh,
                       double& sum_gh_xh) {
    double a = 0, b = 0;
    if (gamma) {
#pragma omp simd simdlen(kSumLanes) reduction(+ : a, b)
        for (int64_t c = 0; c < C; ++c) {
            double gh = norm_gh(dy[c], gamma, c);
            a += gh;
            b += norm_gh_xh(gh, x[c], mu, rs);
        }
    } else {
#pragma omp simd simdlen(kSumLanes) reduction(+ : a, b)
        for (int64_t c = 0; c < C; ++c) {
            double gh = norm_gh(dy[c], (const T*)nullptr, c);
            a += gh;
            b += norm_gh_xh(gh, x[c], mu, rs);
        }
    }
    sum_gh = a;
    sum_gh_xh = b;
}

template <typename T>
static void norm_backward_typed(const Tensor& dy_tensor, const Tensor& x_tensor, const Tensor& gamma_tensor,
                                const Tensor& mean_tensor, const Tensor& rstd_tensor, const Tensor& dx_tensor,
                                const Tensor& dgamma_tensor, const Tensor& dbeta_tensor) {
    int64_t rows = x_tensor.size(0), C = x_tensor.size(1);
    const T *dy = ptr_or_null<T>(dy_tensor), *x = ptr_or_null<T>(x_tensor), *gamma = ptr_or_null<T>(gamma_tensor);
    const T *mean = ptr_or_null<T>(mean_tensor), *rstd = ptr_or_null<T>(rstd_tensor);
    T* dx = mut_or_null<T>(dx_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * C >= kParallelMin, [&](int64_t r) {
        const T *xr = x + r * C, *dyr = dy + r * C;
        double mu = mean ? (double)mean[r] : 0.0, rs = rstd[r];
        double sum_gh = 0, sum_gh_xh = 0;
        row_gradient_sums(dyr, xr, gamma, C, mu, rs, sum_gh, sum_gh_xh);
        double mean_gh = mean ? sum_gh / (double)C : 0.0, mean_gh_xh = sum_gh_xh / (double)C;
        for (int64_t c = 0; c < C; ++c)
            dx[r * C + c] = (T)norm_dx(rs, norm_gh(dyr[c], gamma, c), mean_gh, norm_xh(xr[c], mu, rs), mean_gh_xh);
    });
    // dgamma = sum over rows of dy xh, dbeta = sum over rows of dy.
    affine_param_grads<T>(rows, C, dy, mut_or_null<T>(dgamma_tensor), mut_or_null<T>(dbeta_tensor),
                          [&](int64_t r, int64_t c) { return norm_xh(x[r * C + c], mean ? (double)mean[r] : 0.0, rstd[r]); });
}

static void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                       const Tensor& mean, const Tensor& rstd) {
    if (x.dtype() == kFloat32) norm_forward_typed<float>(x, gamma, beta, eps, out, mean, rstd);
    else norm_forward_typed<double>(x, gamma, beta, eps, out, mean, rstd);
}

static void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    if (x.dtype() == kFloat32) norm_backward_typed<float>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    else norm_backward_typed<double>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

// RMSNorm: the same kernels with no mean (and no beta).
static void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd) {
    layer_norm(x, gamma, Tensor(), eps, out, Tensor(), rstd);
}

static void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                              const Tensor& dx, const Tensor& dgamma) {
    layer_norm_backward(dy, x, gamma, Tensor(), rstd, dx, dgamma, Tensor());
}

void add_layer_norm(Backend& table) { table.layer_norm = {layer_norm, layer_norm_backward}; }
void add_rms_norm(Backend& table) { table.rms_norm = {rms_norm, rms_norm_backward}; }

}  // namespace cpu
}  // namespace nc
