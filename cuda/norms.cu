// norms.cu — LayerNorm and RMSNorm on the GPU, forward and backward. The
// math is tensor/ops/norms.cpp's (the raw ops there call these through the
// table): one block per row, the row's sums by block_sum in double, then
// one pass that writes the row. The per-column parameter gradients (dgamma,
// dbeta) are column sums (column_sums.cuh: two passes over column tiles x
// row chunks).
//
// Shapes as on the CPU: x, y, dy, dx [rows, C]; gamma, beta [C]; mean, rstd [rows].
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

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
}  // namespace

void add_norms(Backend& table) {
    table.layer_norm = layer_norm;
    table.layer_norm_backward = layer_norm_backward;
    table.rms_norm = rms_norm;
    table.rms_norm_backward = rms_norm_backward;
}

}  // namespace cuda
}  // namespace nc
