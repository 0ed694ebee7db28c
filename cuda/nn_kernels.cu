// nn_kernels.cu — LayerNorm, RMSNorm, Dynamic Tanh, softmax + cross-entropy
// and the geodesic update, forward and backward, on the GPU. The formulas are the
// CPU's (tensor/cpu/nn_kernels.cpp, derivations in tutorials 3 and 8): one
// block per row, the row's sums by block_sum in double, then one pass that
// writes the row. The per-column parameter gradients (dgamma, dbeta) are
// column sums (column_sums.cuh: two passes over column tiles x row chunks).
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "tensor/sphere.h"

namespace nc {
namespace cuda {

namespace {

inline int row_blocks(int64_t rows) { return (int)std::max<int64_t>(1, std::min<int64_t>(rows, 65535)); }

template <typename T>
T* ptr_or_null(const Tensor& t) { return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr; }

// ---- LayerNorm -------------------------------------------------------------------

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean, T* rstd,
                                  int64_t rows, int64_t C) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * C;
        double sum = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += xr[c];
        double mu = block_sum(sum) / (double)C;
        double sq = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sq += ((double)xr[c] - mu) * ((double)xr[c] - mu);
        double rs = 1.0 / sqrt(block_sum(sq) / (double)C + eps);
        if (threadIdx.x == 0) {
            mean[r] = (T)mu;
            rstd[r] = (T)rs;
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            T xh = (T)(((double)xr[c] - mu) * rs);
            y[r * C + c] = (gamma ? gamma[c] * xh : xh) + (beta ? beta[c] : T(0));
        }
    }
}

// dx = rstd (gh - mean(gh) - xh mean(gh xh)), gh = dy gamma. `centered`
// says LayerNorm (subtract the mean) or RMSNorm (mean = 0, no mean(gh) term).
template <typename T>
__global__ void norm_backward_kernel(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx,
                                     int64_t rows, int64_t C, bool centered) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * C, *dyr = dy + r * C;
        double mu = centered ? (double)mean[r] : 0.0, rs = rstd[r];
        double s_gh = 0, s_gh_xh = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            double gh = gamma ? (double)dyr[c] * gamma[c] : (double)dyr[c];
            s_gh += gh;
            s_gh_xh += gh * ((double)xr[c] - mu) * rs;
        }
        double mean_gh = centered ? block_sum(s_gh) / (double)C : 0.0;
        double mean_gh_xh = block_sum(s_gh_xh) / (double)C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            double gh = gamma ? (double)dyr[c] * gamma[c] : (double)dyr[c];
            double xh = ((double)xr[c] - mu) * rs;
            dx[r * C + c] = (T)(rs * (gh - mean_gh - xh * mean_gh_xh));
        }
    }
}

// dgamma[c] = sum_r dy[r, c] xh[r, c] (xh = (x - mean) rstd, mean 0 for
// RMSNorm), dbeta[c] = sum_r dy[r, c]: column sums (column_sums.cuh).
template <typename T>
struct NormGammaTerm {
    const T *dy, *x, *mean, *rstd;
    int64_t C;
    __device__ double operator()(int64_t r, int64_t c) const {
        double xh = ((double)x[r * C + c] - (mean ? (double)mean[r] : 0.0)) * (double)rstd[r];
        return (double)dy[r * C + c] * xh;
    }
};

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* gamma, double eps, T* y, T* rstd, int64_t rows, int64_t C) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * C;
        double sq = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sq += (double)xr[c] * xr[c];
        double rs = 1.0 / sqrt(block_sum(sq) / (double)C + eps);
        if (threadIdx.x == 0) rstd[r] = (T)rs;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            T xh = (T)(xr[c] * rs);
            y[r * C + c] = gamma ? gamma[c] * xh : xh;
        }
    }
}

// ---- softmax + cross-entropy --------------------------------------------------------

template <typename T>
__global__ void cross_entropy_kernel(const T* logits, const int64_t* targets, int64_t ignore_index, T* losses, T* lse,
                                     int64_t N, int64_t V, IndexErrorRecord* record) {
    for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
        const T* row = logits + n * V;
        double m = -INFINITY;
        for (int64_t v = threadIdx.x; v < V; v += blockDim.x) m = fmax(m, (double)row[v]);
        m = block_max(m);
        double total = 0;
        for (int64_t v = threadIdx.x; v < V; v += blockDim.x) total += exp_shifted(row[v], m);
        double logsumexp = m + log(block_sum(total));
        if (threadIdx.x == 0) {
            lse[n] = (T)logsumexp;
            int64_t t = targets[n];
            // A target out of range is recorded (cuda_common.cuh) and adds no loss.
            bool counted = t != ignore_index && index_in_range(t, V, kCrossEntropyOp, record);
            losses[n] = counted ? (T)(logsumexp - row[t]) : T(0);
        }
    }
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T* dlosses, const T* logits, const int64_t* targets, const T* lse,
                                              int64_t ignore_index, T* dlogits, int64_t N, int64_t V) {
    int64_t total = N * V;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = e / V, v = e % V;
        if (targets[n] == ignore_index || targets[n] < 0 || targets[n] >= V) {  // (the forward recorded a bad one)
            dlogits[e] = T(0);
            continue;
        }
        double g = dlosses[n];
        double value = g * exp_shifted(logits[e], (double)lse[n]);  // g * softmax
        if (v == targets[n]) value -= g;                               // - g * onehot
        dlogits[e] = (T)value;
    }
}

// ---- Dynamic Tanh ---------------------------------------------------------------------
// Formulas in tensor/raw_nn.h. Forward: one thread per element. Backward:
// one block per row, which also sums the row's share of dalpha.

template <typename T>
__global__ void dyt_kernel(const T* x, const T* alpha_ptr, const T* w, const T* b, T* y, int64_t rows, int64_t C) {
    T alpha = *alpha_ptr;
    int64_t n = rows * C;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % C;
        y[e] = w[i] * tanh(alpha * x[e]) + (b ? b[i] : T(0));
    }
}

template <typename T>
__global__ void dyt_backward_kernel(const T* dy, const T* x, const T* alpha_ptr, const T* w, T* dx, T* dy_t,
                                    T* dalpha_rows, int64_t rows, int64_t C) {
    T alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double part = 0;
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            int64_t e = r * C + i;
            T t = tanh(alpha * x[e]);
            T dz = dy[e] * w[i] * (T(1) - t * t);
            dx[e] = alpha * dz;
            dy_t[e] = dy[e] * t;
            part += (double)dz * x[e];
        }
        double total = block_sum(part);
        if (threadIdx.x == 0) dalpha_rows[r] = (T)total;
    }
}

// ---- the geodesic update ------------------------------------------------------------

// s = <x, x> and ux = <u, x> of one row, summed by the whole block.
template <typename T>
__device__ void row_dots(const T* xr, const T* ur, int64_t D, double& s, double& ux) {
    s = 0;
    ux = 0;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
        s += (double)xr[i] * xr[i];
        ux += (double)ur[i] * xr[i];
    }
    s = block_sum(s);
    ux = block_sum(ux);
}

template <typename T>
__global__ void geodesic_kernel(const T* x, const T* u, const T* alpha_ptr, T* y, int64_t rows, int64_t D) {
    double alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * D, *ur = u + r * D;
        double s = 0, ux = 0;
        row_dots(xr, ur, D, s, ux);
        if (s == 0) {  // no sphere through x = 0: plain residual add
            for (int64_t i = threadIdx.x; i < D; i += blockDim.x) y[r * D + i] = xr[i] + ur[i];
            continue;
        }
        double c = ux / s, ww = 0;  // v = u - c x is u's tangent part; w = alpha v
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
        }
        SphereCoefficients k = sphere_coefficients(block_sum(ww) / s);
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
            y[r * D + i] = (T)(k.C * xr[i] + k.S * alpha * (ur[i] - c * xr[i]));
    }
}

template <typename T>
__global__ void geodesic_backward_kernel(const T* g, const T* x, const T* u, const T* alpha_ptr, T* dx, T* du,
                                         T* dalpha, int64_t rows, int64_t D) {
    double alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *gr = g + r * D, *xr = x + r * D, *ur = u + r * D;
        double s = 0, ux = 0;
        row_dots(xr, ur, D, s, ux);
        if (s == 0) {  // the fallback y = x + u
            for (int64_t i = threadIdx.x; i < D; i += blockDim.x) dx[r * D + i] = du[r * D + i] = gr[i];
            if (threadIdx.x == 0) dalpha[r] = 0;
            continue;
        }
        double c = ux / s;
        // Pass 1: q and the projections a = <g, x>, b = <g, w>.
        double ww = 0, a = 0, b = 0;
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
            a += (double)gr[i] * xr[i];
            b += (double)gr[i] * w;
        }
        ww = block_sum(ww);
        a = block_sum(a);
        b = block_sum(b);
        double q = ww / s;
        SphereCoefficients k = sphere_coefficients(q);
        double gam = -(k.S / 2) * a + k.dS * b;  // dL/dq
        // Pass 2: h = dL/dw = S g + (2 gam / s) w; dL/dalpha = <h, v>; kvec = alpha h.
        double h_dot_v = 0, kx = 0;
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
            double v = ur[i] - c * xr[i];
            double h = k.S * gr[i] + (2 * gam / s) * alpha * v;
            h_dot_v += h * v;
            kx += alpha * h * xr[i];
        }
        h_dot_v = block_sum(h_dot_v);
        kx = block_sum(kx);
        if (threadIdx.x == 0) dalpha[r] = (T)h_dot_v;
        // Pass 3: du = P_x(kvec); dx through C, S, q and through v(x).
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
            double v = ur[i] - c * xr[i];
            double kv = alpha * (k.S * gr[i] + (2 * gam / s) * alpha * v);
            du[r * D + i] = (T)(kv - (kx / s) * xr[i]);
            dx[r * D + i] =
                (T)(k.C * gr[i] - (2 * gam * q / s) * xr[i] - (kx / s) * ur[i] + (2 * c * kx / s) * xr[i] - c * kv);
        }
    }
}

template <typename T>
void layer_norm_typed(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                      const Tensor& mean, const Tensor& rstd) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0) return;
    layer_norm_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<T>(x), ptr_or_null<T>(gamma),
                                                                   ptr_or_null<T>(beta), eps, ptr_or_null<T>(out),
                                                                   ptr_or_null<T>(mean), ptr_or_null<T>(rstd), rows, C);
    check_launch("layer_norm_kernel");
}

template <typename T>
void norm_backward_typed(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0 || C == 0) return;
    norm_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
        ptr_or_null<T>(dy), ptr_or_null<T>(x), ptr_or_null<T>(gamma), ptr_or_null<T>(mean), ptr_or_null<T>(rstd),
        ptr_or_null<T>(dx), rows, C, mean.defined());
    check_launch("norm_backward_kernel");
    if (dgamma.defined() || dbeta.defined()) {
        if (dgamma.defined())
            column_sums(NormGammaTerm<T>{ptr_or_null<T>(dy), ptr_or_null<T>(x), ptr_or_null<T>(mean), ptr_or_null<T>(rstd), C},
                        ptr_or_null<T>(dgamma), rows, C, "norm_param_grads (dgamma)");
        if (dbeta.defined()) column_sums(MatrixEntry<T>{ptr_or_null<T>(dy), C}, ptr_or_null<T>(dbeta), rows, C, "norm_param_grads (dbeta)");
    }
}

}  // namespace

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& rstd) {
    if (x.dtype() == kFloat32) layer_norm_typed<float>(x, gamma, beta, eps, out, mean, rstd);
    else layer_norm_typed<double>(x, gamma, beta, eps, out, mean, rstd);
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    if (x.dtype() == kFloat32) norm_backward_typed<float>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    else norm_backward_typed<double>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        rms_norm_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<float>(x), ptr_or_null<float>(gamma),
                                                                     eps, ptr_or_null<float>(out), ptr_or_null<float>(rstd), rows, C);
    else
        rms_norm_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<double>(x), ptr_or_null<double>(gamma),
                                                                     eps, ptr_or_null<double>(out), ptr_or_null<double>(rstd), rows, C);
    check_launch("rms_norm_kernel");
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma) {
    // RMSNorm is LayerNorm without the mean: an undefined `mean` says so.
    if (x.dtype() == kFloat32) norm_backward_typed<float>(dy, x, gamma, Tensor(), rstd, dx, dgamma, Tensor());
    else norm_backward_typed<double>(dy, x, gamma, Tensor(), rstd, dx, dgamma, Tensor());
}

void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                   const Tensor& logsumexp) {
    int64_t N = logits.size(0), V = logits.size(1);
    if (N == 0) return;
    const int64_t* t = static_cast<const int64_t*>(targets.raw_data());
    if (logits.dtype() == kFloat32)
        cross_entropy_kernel<<<row_blocks(N), kThreads, 0, stream()>>>(ptr_or_null<float>(logits), t, ignore_index,
                                                                       ptr_or_null<float>(losses), ptr_or_null<float>(logsumexp), N, V,
                                                                       index_error_record());
    else
        cross_entropy_kernel<<<row_blocks(N), kThreads, 0, stream()>>>(ptr_or_null<double>(logits), t, ignore_index,
                                                                       ptr_or_null<double>(losses), ptr_or_null<double>(logsumexp), N, V,
                                                                       index_error_record());
    check_launch("cross_entropy_kernel");
}

void cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                            const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits) {
    int64_t N = logits.size(0), V = logits.size(1);
    if (N * V == 0) return;
    const int64_t* t = static_cast<const int64_t*>(targets.raw_data());
    if (logits.dtype() == kFloat32)
        cross_entropy_backward_kernel<<<blocks_for(N * V), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dlosses), ptr_or_null<float>(logits), t, ptr_or_null<float>(logsumexp), ignore_index,
            ptr_or_null<float>(dlogits), N, V);
    else
        cross_entropy_backward_kernel<<<blocks_for(N * V), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dlosses), ptr_or_null<double>(logits), t, ptr_or_null<double>(logsumexp), ignore_index,
            ptr_or_null<double>(dlogits), N, V);
    check_launch("cross_entropy_backward_kernel");
}

void dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows * C == 0) return;
    if (x.dtype() == kFloat32)
        dyt_kernel<<<blocks_for(rows * C), kThreads, 0, stream()>>>(ptr_or_null<float>(x), ptr_or_null<float>(alpha),
                                                                    ptr_or_null<float>(weight), ptr_or_null<float>(bias),
                                                                    ptr_or_null<float>(out), rows, C);
    else
        dyt_kernel<<<blocks_for(rows * C), kThreads, 0, stream()>>>(ptr_or_null<double>(x), ptr_or_null<double>(alpha),
                                                                    ptr_or_null<double>(weight), ptr_or_null<double>(bias),
                                                                    ptr_or_null<double>(out), rows, C);
    check_launch("dyt_kernel");
}

void dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                  const Tensor& dy_t, const Tensor& dalpha_rows) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        dyt_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dy), ptr_or_null<float>(x), ptr_or_null<float>(alpha), ptr_or_null<float>(weight),
            ptr_or_null<float>(dx), ptr_or_null<float>(dy_t), ptr_or_null<float>(dalpha_rows), rows, C);
    else
        dyt_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dy), ptr_or_null<double>(x), ptr_or_null<double>(alpha), ptr_or_null<double>(weight),
            ptr_or_null<double>(dx), ptr_or_null<double>(dy_t), ptr_or_null<double>(dalpha_rows), rows, C);
    check_launch("dyt_backward_kernel");
}

void geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out) {
    int64_t rows = x.size(0), D = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        geodesic_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<float>(x), ptr_or_null<float>(u),
                                                                     ptr_or_null<float>(alpha), ptr_or_null<float>(out), rows, D);
    else
        geodesic_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<double>(x), ptr_or_null<double>(u),
                                                                     ptr_or_null<double>(alpha), ptr_or_null<double>(out), rows, D);
    check_launch("geodesic_kernel");
}

void geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha,
                              const Tensor& dx, const Tensor& du, const Tensor& dalpha_rows) {
    int64_t rows = x.size(0), D = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        geodesic_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dy), ptr_or_null<float>(x), ptr_or_null<float>(u), ptr_or_null<float>(alpha),
            ptr_or_null<float>(dx), ptr_or_null<float>(du), ptr_or_null<float>(dalpha_rows), rows, D);
    else
        geodesic_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dy), ptr_or_null<double>(x), ptr_or_null<double>(u), ptr_or_null<double>(alpha),
            ptr_or_null<double>(dx), ptr_or_null<double>(du), ptr_or_null<double>(dalpha_rows), rows, D);
    check_launch("geodesic_backward_kernel");
}

}  // namespace cuda
}  // namespace nc
