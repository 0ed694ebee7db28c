// attention_simple.cuh — the simple attention kernels, forward and
// backward (cuda/attention.cu launches them for float64 and for the widths
// the tiled kernels do not cover; they are also the reference the GPU
// parity tests compare the tiled ones with). In a header of their own so
// that the CPU emulator (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: q [N, T, D], k [N, S, D], v [N, S, Dv], out [N, T, Dv],
// logsumexp [N, T], with N = B H (batch times heads). The operands are
// views, each found through its MatrixLayout (tensor/matrix_layout.h);
// logsumexp is contiguous.
//
// Simple version, one thread block per (batch x head, query row): the block
// walks the keys in tiles of blockDim.x keys; each thread scores one key of
// the tile, the block updates the running max m and sum l, and each thread
// owns some output dimensions e and adds sum_j p_j v_j[e]. Its backward
// recomputes p per row in double precision and adds dk_j and dv_j with an
// atomicAdd of the tensor's own type (many query rows add to the same key),
// so a float32 run accumulates them in float32, in no fixed order.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/attention_strides.cuh"
#include "cuda/block_reduce.cuh"
#include "cuda/device_common.cuh"

namespace nc {
namespace cuda {

constexpr int kSimpleTile = 128;  // keys per tile = threads per block

// Keys this query may see: all S, or j <= i when causal.
__device__ inline int64_t visible_keys(bool causal, int64_t i, int64_t S) { return causal ? (i + 1 < S ? i + 1 : S) : S; }

template <typename T>
__global__ void attention_forward_kernel(const T* q_all, const T* k_all, const T* v_all, T* out_all, T* lse_all,
                                         int64_t N, int64_t Tq, int64_t S, int64_t D, int64_t Dv, bool causal,
                                         double scale, ForwardLayouts at) {
    __shared__ double p_tile[kSimpleTile];
    __shared__ double stats[2];  // running max, running sum
    double* acc = dynamic_shared_memory<double>();  // Dv running numerators
    for (int64_t row = blockIdx.x; row < N * Tq; row += gridDim.x) {
        int64_t n = row / Tq, i = row % Tq;
        const T* q = q_all + at.q.matrix(n) + i * at.q.row_stride;
        const T* k = k_all + at.k.matrix(n);
        const T* v = v_all + at.v.matrix(n);
        const int64_t k_rs = at.k.row_stride, v_rs = at.v.row_stride;
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) acc[e] = 0;
        if (threadIdx.x == 0) {
            stats[0] = -INFINITY;
            stats[1] = 0;
        }
        __syncthreads();
        int64_t keys = visible_keys(causal, i, S);
        for (int64_t j0 = 0; j0 < keys; j0 += kSimpleTile) {
            int64_t j = j0 + threadIdx.x;
            double s = -INFINITY;
            if (j < keys) {
                double dot = 0;
                for (int64_t d = 0; d < D; ++d) dot += (double)q[d] * k[j * k_rs + d];
                s = scale * dot;
            }
            double m_old = stats[0];
            double m_new = fmax(m_old, block_max(s));
            double p = j < keys ? exp(s - m_new) : 0.0;
            p_tile[threadIdx.x] = p;
            double tile_sum = block_sum(p);  // (its barriers also publish p_tile)
            double rescale = exp(m_old - m_new);  // 0 on the first tile (m_old = -inf)
            int64_t count = keys - j0 < kSimpleTile ? keys - j0 : kSimpleTile;
            for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) {
                double a = acc[e] * rescale;
                for (int64_t t = 0; t < count; ++t) a += p_tile[t] * v[(j0 + t) * v_rs + e];
                acc[e] = a;
            }
            // No barrier before thread 0 updates stats: every thread read
            // stats[0] before block_max's barriers, and p_tile is not written
            // again before the barrier below, which all reach after reading it.
            if (threadIdx.x == 0) {
                stats[0] = m_new;
                stats[1] = stats[1] * rescale + tile_sum;
            }
            __syncthreads();
        }
        double l = stats[1];
        T* out = out_all + at.out.matrix(n) + i * at.out.row_stride;
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) out[e] = (T)(l > 0 ? acc[e] / l : 0.0);
        if (threadIdx.x == 0) lse_all[row] = (T)(stats[0] + log(l));
        __syncthreads();
    }
}

template <typename T>
__global__ void attention_backward_kernel(const T* dout_all, const T* q_all, const T* k_all, const T* v_all,
                                          const T* out_all, const T* lse_all, T* dq_all, T* dk_all, T* dv_all,
                                          int64_t N, int64_t Tq, int64_t S, int64_t D, int64_t Dv, bool causal,
                                          double scale, BackwardLayouts at) {
    __shared__ double ds_tile[kSimpleTile];
    for (int64_t row = blockIdx.x; row < N * Tq; row += gridDim.x) {
        int64_t n = row / Tq, i = row % Tq;
        const T* q = q_all + at.q.matrix(n) + i * at.q.row_stride;
        const T* dout = dout_all + at.dout.matrix(n) + i * at.dout.row_stride;
        const T* out = out_all + at.out.matrix(n) + i * at.out.row_stride;
        T* dq = dq_all + at.dq.matrix(n) + i * at.dq.row_stride;
        const T* k = k_all + at.k.matrix(n);
        const T* v = v_all + at.v.matrix(n);
        T* dk = dk_all + at.dk.matrix(n);
        T* dv = dv_all + at.dv.matrix(n);
        const int64_t k_rs = at.k.row_stride, v_rs = at.v.row_stride, dk_rs = at.dk.row_stride, dv_rs = at.dv.row_stride;
        double L = lse_all[row];
        double part = 0;
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) part += (double)dout[e] * out[e];
        double Dsum = block_sum(part);
        int64_t keys = visible_keys(causal, i, S);
        for (int64_t j0 = 0; j0 < keys; j0 += kSimpleTile) {
            int64_t j = j0 + threadIdx.x;
            double ds = 0;
            if (j < keys) {
                double dot = 0, dp = 0;
                for (int64_t d = 0; d < D; ++d) dot += (double)q[d] * k[j * k_rs + d];
                for (int64_t e = 0; e < Dv; ++e) dp += (double)dout[e] * v[j * v_rs + e];
                double p = exp(scale * dot - L);
                ds = p * (dp - Dsum);
                // This thread owns key j for this query: its dk and dv contributions.
                for (int64_t d = 0; d < D; ++d) atomicAdd(&dk[j * dk_rs + d], (T)(scale * ds * q[d]));
                for (int64_t e = 0; e < Dv; ++e) atomicAdd(&dv[j * dv_rs + e], (T)(p * dout[e]));
            }
            ds_tile[threadIdx.x] = ds;
            __syncthreads();
            int64_t count = keys - j0 < kSimpleTile ? keys - j0 : kSimpleTile;
            for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
                double g = 0;
                for (int64_t t = 0; t < count; ++t) g += ds_tile[t] * k[(j0 + t) * k_rs + d];
                dq[d] += (T)(scale * g);
            }
            __syncthreads();
        }
    }
}

}  // namespace cuda
}  // namespace nc
