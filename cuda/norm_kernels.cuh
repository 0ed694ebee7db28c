// norm_kernels.cuh — LayerNorm and RMSNorm kernels, forward and backward
// (cuda/norms.cu launches them). The math is tensor/ops/norms.cpp's: one
// block per row, the row's sums by block_sum in double, then one pass that
// writes the row. The per-column parameter gradients (dgamma, dbeta) are
// column sums of NormGammaTerm and of dy (reduction_kernels.cuh). In a
// header of their own so that the CPU emulator (tests/cuda_emulator) runs
// these very kernels in CI.
//
// Shapes as on the CPU: x, y, dy, dx [rows, C]; gamma, beta [C]; mean, rstd [rows].
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"

namespace nc {
namespace cuda {

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

}  // namespace cuda
}  // namespace nc
