// nn_kernels.cpp — CPU kernels for the fused neural-network ops: LayerNorm,
// RMSNorm, Dynamic Tanh, softmax + cross-entropy and the geodesic update,
// forward and backward. The formulas are in tensor/raw_nn.h; the derivations in
// tutorials 03 and 08. Every row is independent, so rows are split across
// threads; per-row sums accumulate in double.
#include <algorithm>
#include <cmath>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/sphere.h"

namespace nc {
namespace cpu {

constexpr int64_t kParallelRows = 4;  // fewer rows than this: one thread

template <typename T>
static const T* ptr_or_null(const Tensor& t) { return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr; }
template <typename T>
static T* mut_or_null(const Tensor& t) { return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr; }

// dgamma[c] = sum_rows dy[r, c] * xh[r, c] and dbeta[c] = sum_rows dy[r, c],
// with xh computed by `normalized(r, c)`. Threads split the columns, so no two
// threads write the same entry.
template <typename T, typename Normalized>
static void affine_param_grads(int64_t rows, int64_t C, const T* dy, T* dgamma, T* dbeta, Normalized normalized) {
    if (!dgamma && !dbeta) return;
    const int64_t block = 64;
#pragma omp parallel for schedule(static) if (rows * C >= 32768)
    for (int64_t c0 = 0; c0 < C; c0 += block) {
        int64_t c1 = std::min(C, c0 + block);
        double g[block] = {}, b[block] = {};
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = c0; c < c1; ++c) {
                g[c - c0] += (double)dy[r * C + c] * normalized(r, c);
                b[c - c0] += dy[r * C + c];
            }
        for (int64_t c = c0; c < c1; ++c) {
            if (dgamma) dgamma[c] = (T)g[c - c0];
            if (dbeta) dbeta[c] = (T)b[c - c0];
        }
    }
}

// ---- LayerNorm -------------------------------------------------------------------

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

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& rstd) {
    if (x.dtype() == kFloat32) layer_norm_typed<float>(x, gamma, beta, eps, out, mean, rstd);
    else layer_norm_typed<double>(x, gamma, beta, eps, out, mean, rstd);
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    if (x.dtype() == kFloat32) layer_norm_backward_typed<float>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    else layer_norm_backward_typed<double>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

// ---- RMSNorm ---------------------------------------------------------------------

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

void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd) {
    if (x.dtype() == kFloat32) rms_norm_typed<float>(x, gamma, eps, out, rstd);
    else rms_norm_typed<double>(x, gamma, eps, out, rstd);
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma) {
    if (x.dtype() == kFloat32) rms_norm_backward_typed<float>(dy, x, gamma, rstd, dx, dgamma);
    else rms_norm_backward_typed<double>(dy, x, gamma, rstd, dx, dgamma);
}

// ---- softmax + cross-entropy --------------------------------------------------------

template <typename T>
static void cross_entropy_typed(const Tensor& logits_t, const Tensor& targets_t, int64_t ignore_index,
                                const Tensor& losses_t, const Tensor& lse_t) {
    int64_t N = logits_t.size(0), V = logits_t.size(1);
    const T* logits = ptr_or_null<T>(logits_t);
    const int64_t* targets = targets_t.data<int64_t>();
    T *losses = mut_or_null<T>(losses_t), *lse = mut_or_null<T>(lse_t);
#pragma omp parallel for schedule(static) if (N >= kParallelRows && N * V >= 32768)
    for (int64_t n = 0; n < N; ++n) {
        const T* row = logits + n * V;
        double m = -INFINITY, total = 0;
        for (int64_t v = 0; v < V; ++v) m = std::max(m, (double)row[v]);
        for (int64_t v = 0; v < V; ++v) total += std::exp((double)row[v] - m);
        double logsumexp = m + std::log(total);  // log sum_v exp(logit_v), computed without overflow
        lse[n] = (T)logsumexp;
        losses[n] = targets[n] == ignore_index ? T(0) : (T)(logsumexp - row[targets[n]]);
    }
}

template <typename T>
static void cross_entropy_backward_typed(const Tensor& dlosses_t, const Tensor& logits_t, const Tensor& targets_t,
                                         const Tensor& lse_t, int64_t ignore_index, const Tensor& dlogits_t) {
    int64_t N = logits_t.size(0), V = logits_t.size(1);
    const T *dlosses = ptr_or_null<T>(dlosses_t), *logits = ptr_or_null<T>(logits_t), *lse = ptr_or_null<T>(lse_t);
    const int64_t* targets = targets_t.data<int64_t>();
    T* dlogits = mut_or_null<T>(dlogits_t);
#pragma omp parallel for schedule(static) if (N >= kParallelRows && N * V >= 32768)
    for (int64_t n = 0; n < N; ++n) {
        T* drow = dlogits + n * V;
        if (targets[n] == ignore_index) {
            std::fill(drow, drow + V, T(0));
            continue;
        }
        const T* row = logits + n * V;
        double g = dlosses[n], shift = lse[n];
        for (int64_t v = 0; v < V; ++v) drow[v] = (T)(g * std::exp((double)row[v] - shift));  // g * softmax
        drow[targets[n]] -= (T)g;                                                            // - g * onehot
    }
}

void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                   const Tensor& logsumexp) {
    if (logits.dtype() == kFloat32) cross_entropy_typed<float>(logits, targets, ignore_index, losses, logsumexp);
    else cross_entropy_typed<double>(logits, targets, ignore_index, losses, logsumexp);
}

void cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                            const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits) {
    if (logits.dtype() == kFloat32)
        cross_entropy_backward_typed<float>(dlosses, logits, targets, logsumexp, ignore_index, dlogits);
    else cross_entropy_backward_typed<double>(dlosses, logits, targets, logsumexp, ignore_index, dlogits);
}

// ---- the geodesic update ------------------------------------------------------------
//
// The coefficients C(q), S(q), S'(q) are in tensor/sphere.h (shared with CUDA).

template <typename T>
static void geodesic_typed(const Tensor& x_t, const Tensor& u_t, const Tensor& alpha_t, const Tensor& out_t) {
    int64_t rows = x_t.size(0), D = x_t.size(1);
    const T *x = ptr_or_null<T>(x_t), *u = ptr_or_null<T>(u_t);
    double alpha = *ptr_or_null<T>(alpha_t);
    T* y = mut_or_null<T>(out_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * D >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * D, *ur = u + r * D;
        T* yr = y + r * D;
        double s = 0, ux = 0;
        for (int64_t i = 0; i < D; ++i) {
            s += (double)xr[i] * xr[i];
            ux += (double)ur[i] * xr[i];
        }
        if (s == 0) {  // no sphere through x = 0: plain residual add
            for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] + ur[i];
            continue;
        }
        double c = ux / s, ww = 0;  // v = u - c x is u's tangent part; w = alpha v
        for (int64_t i = 0; i < D; ++i) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
        }
        SphereCoefficients k = sphere_coefficients(ww / s);
        for (int64_t i = 0; i < D; ++i) yr[i] = (T)(k.C * xr[i] + k.S * alpha * (ur[i] - c * xr[i]));
    }
}

template <typename T>
static void geodesic_backward_typed(const Tensor& dy_t, const Tensor& x_t, const Tensor& u_t, const Tensor& alpha_t,
                                    const Tensor& dx_t, const Tensor& du_t, const Tensor& dalpha_t) {
    int64_t rows = x_t.size(0), D = x_t.size(1);
    const T *g = ptr_or_null<T>(dy_t), *x = ptr_or_null<T>(x_t), *u = ptr_or_null<T>(u_t);
    double alpha = *ptr_or_null<T>(alpha_t);
    T *dx = mut_or_null<T>(dx_t), *du = mut_or_null<T>(du_t), *dalpha = mut_or_null<T>(dalpha_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * D >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *gr = g + r * D, *xr = x + r * D, *ur = u + r * D;
        T *dxr = dx + r * D, *dur = du + r * D;
        double s = 0, ux = 0;
        for (int64_t i = 0; i < D; ++i) {
            s += (double)xr[i] * xr[i];
            ux += (double)ur[i] * xr[i];
        }
        if (s == 0) {  // the fallback y = x + u
            for (int64_t i = 0; i < D; ++i) dxr[i] = dur[i] = gr[i];
            dalpha[r] = 0;
            continue;
        }
        double c = ux / s;
        // Pass 1: q and the two projections of the incoming gradient, a = <g,x>, b = <g,w>.
        double ww = 0, a = 0, b = 0;
        for (int64_t i = 0; i < D; ++i) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
            a += (double)gr[i] * xr[i];
            b += (double)gr[i] * w;
        }
        double q = ww / s;
        SphereCoefficients k = sphere_coefficients(q);
        double gam = -(k.S / 2) * a + k.dS * b;  // dL/dq
        // Pass 2: h = dL/dw = S g + (2 gam / s) w; dL/dalpha = <h, v>; kvec = alpha h = dL/dv.
        double h_dot_v = 0, kx = 0;
        for (int64_t i = 0; i < D; ++i) {
            double v = ur[i] - c * xr[i];
            double h = k.S * gr[i] + (2 * gam / s) * alpha * v;
            h_dot_v += h * v;
            kx += alpha * h * xr[i];
        }
        dalpha[r] = (T)h_dot_v;
        // Pass 3: du = P_x(kvec); dx = through C, S, q (w fixed) + through the projection v(x).
        for (int64_t i = 0; i < D; ++i) {
            double v = ur[i] - c * xr[i];
            double kv = alpha * (k.S * gr[i] + (2 * gam / s) * alpha * v);
            dur[i] = (T)(kv - (kx / s) * xr[i]);
            dxr[i] = (T)(k.C * gr[i] - (2 * gam * q / s) * xr[i] - (kx / s) * ur[i] + (2 * c * kx / s) * xr[i] - c * kv);
        }
    }
}

// ---- Dynamic Tanh ---------------------------------------------------------------------
//
// Formulas in tensor/raw_nn.h. tanh_fast is vectorizable in float32 (and
// std::tanh in float64), so the forward is one streaming pass.

template <typename T>
static void dyt_typed(const Tensor& x_t, const Tensor& alpha_t, const Tensor& weight_t, const Tensor& bias_t,
                      const Tensor& out_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *x = ptr_or_null<T>(x_t), *w = ptr_or_null<T>(weight_t), *b = ptr_or_null<T>(bias_t);
    const T alpha = *ptr_or_null<T>(alpha_t);
    T* y = mut_or_null<T>(out_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * C;
        T* yr = y + r * C;
        if (b)
            for (int64_t i = 0; i < C; ++i) yr[i] = w[i] * tanh_fast(alpha * xr[i]) + b[i];
        else
            for (int64_t i = 0; i < C; ++i) yr[i] = w[i] * tanh_fast(alpha * xr[i]);
    }
}

template <typename T>
static void dyt_backward_typed(const Tensor& dy_t, const Tensor& x_t, const Tensor& alpha_t, const Tensor& weight_t,
                               const Tensor& dx_t, const Tensor& dyt_t, const Tensor& dalpha_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *g = ptr_or_null<T>(dy_t), *x = ptr_or_null<T>(x_t), *w = ptr_or_null<T>(weight_t);
    const T alpha = *ptr_or_null<T>(alpha_t);
    T *dx = mut_or_null<T>(dx_t), *gt = mut_or_null<T>(dyt_t), *dalpha = mut_or_null<T>(dalpha_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *gr = g + r * C, *xr = x + r * C;
        T *dxr = dx + r * C, *gtr = gt + r * C;
        double dalpha_row = 0;
        for (int64_t i = 0; i < C; ++i) {
            T t = tanh_fast(alpha * xr[i]);
            T dz = gr[i] * w[i] * (T(1) - t * t);  // through tanh: 1 - t^2
            dxr[i] = alpha * dz;
            gtr[i] = gr[i] * t;
            dalpha_row += (double)dz * xr[i];
        }
        dalpha[r] = (T)dalpha_row;
    }
}

void dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out) {
    if (x.dtype() == kFloat32) dyt_typed<float>(x, alpha, weight, bias, out);
    else dyt_typed<double>(x, alpha, weight, bias, out);
}

void dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                  const Tensor& dy_t, const Tensor& dalpha_rows) {
    if (x.dtype() == kFloat32) dyt_backward_typed<float>(dy, x, alpha, weight, dx, dy_t, dalpha_rows);
    else dyt_backward_typed<double>(dy, x, alpha, weight, dx, dy_t, dalpha_rows);
}

void geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out) {
    if (x.dtype() == kFloat32) geodesic_typed<float>(x, u, alpha, out);
    else geodesic_typed<double>(x, u, alpha, out);
}

void geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha,
                              const Tensor& dx, const Tensor& du, const Tensor& dalpha_rows) {
    if (x.dtype() == kFloat32) geodesic_backward_typed<float>(dy, x, u, alpha, dx, du, dalpha_rows);
    else geodesic_backward_typed<double>(dy, x, u, alpha, dx, du, dalpha_rows);
}

}  // namespace cpu
}  // namespace nc
