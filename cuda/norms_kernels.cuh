// norms_kernels.cuh — LayerNorm and RMSNorm kernels, forward and backward
// (cuda/norms.cu launches them). One block per row: the row's sums by
// block_sum in double, then one pass that writes the row, calling the
// formulas of tensor/ops/norms.h, the very functions the CPU loops call.
// The per-column parameter gradients (dgamma, dbeta) are column sums of
// NormGammaTerm and of dy (column_sums.cuh). In a header of their own so
// that the CPU emulator (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes as on the CPU: x, y, dy, dx [rows, C]; gamma, beta [C]; mean, rstd [rows].
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "tensor/ops/norms.h"  // the formulas, shared with the CPU

namespace nc {
namespace cuda {

// One forward and one backward for both norms, as on the CPU: `mean` is null
// for RMSNorm (mu = 0).
template <typename T>
__global__ void norm_forward_kernel(const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean, T* rstd,
                                    int64_t rows, int64_t C) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * C;
        double mu = 0;
        if (mean) {
            double sum = 0;
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += xr[c];
            mu = block_sum(sum) / (double)C;
        }
        double sq = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sq += ((double)xr[c] - mu) * ((double)xr[c] - mu);
        double rs = norm_rstd(block_sum(sq), C, eps);
        if (threadIdx.x == 0) {
            if (mean) mean[r] = (T)mu;
            rstd[r] = (T)rs;
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) y[r * C + c] = norm_output((T)norm_xh(xr[c], mu, rs), gamma, beta, c);
    }
}

template <typename T>
__global__ void norm_backward_kernel(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx,
                                     int64_t rows, int64_t C) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * C, *dyr = dy + r * C;
        double mu = mean ? (double)mean[r] : 0.0, rs = rstd[r];
        double s_gh = 0, s_gh_xh = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            double gh = norm_gh(dyr[c], gamma, c);
            s_gh += gh;
            s_gh_xh += norm_gh_xh(gh, xr[c], mu, rs);
        }
        double mean_gh = mean ? block_sum(s_gh) / (double)C : 0.0;
        double mean_gh_xh = block_sum(s_gh_xh) / (double)C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            dx[r * C + c] = (T)norm_dx(rs, norm_gh(dyr[c], gamma, c), mean_gh, norm_xh(xr[c], mu, rs), mean_gh_xh);
    }
}

// dgamma[c] = sum over rows of dy xh (mean 0 for RMSNorm), a column sum
// (column_sums.cuh); dbeta[c] = sum over rows of dy.
template <typename T>
struct NormGammaTerm {
    const T *dy, *x, *mean, *rstd;
    int64_t C;
    __device__ double operator()(int64_t r, int64_t c) const {
        return (double)dy[r * C + c] * norm_xh(x[r * C + c], mean ? (double)mean[r] : 0.0, rstd[r]);
    }
};

}  // namespace cuda
}  // namespace nc
