// attention.cu — scaled dot-product attention on the GPU with an online
// softmax (the algorithm of tensor/cpu/attention.cpp and FlashAttention),
// forward and backward, never storing the T x S probabilities.
//
// This first version favours being easy to check over speed: one thread
// block per (batch x head, query row). The block walks the keys in tiles of
// blockDim.x keys; each thread scores one key of the tile, the block updates
// the running max m and sum l, and then each thread owns some output
// dimensions e and adds sum_j p_j v_j[e] for the tile. Forward keeps out and
// the log-sum-exp L = m + log l per query.
//
// Backward, per query row: recompute p_j = exp(scale s_j - L) tile by tile,
// dp_j = <dout, v_j>, ds_j = p_j (dp_j - D) with D = <dout, out>; then
// dq += scale ds_j k_j (the block's own row), and dk_j += scale ds_j q,
// dv_j += p_j dout with atomicAdd (many query rows add to the same key).
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

constexpr int kTile = 128;  // keys per tile = threads per block

// Keys this query may see: all S, or j <= i when causal.
__device__ inline int64_t visible_keys(bool causal, int64_t i, int64_t S) { return causal ? (i + 1 < S ? i + 1 : S) : S; }

template <typename T>
__global__ void attention_forward_kernel(const T* q_all, const T* k_all, const T* v_all, T* out_all, T* lse_all,
                                         int64_t N, int64_t Tq, int64_t S, int64_t D, int64_t Dv, bool causal,
                                         double scale) {
    __shared__ double p_tile[kTile];
    __shared__ double stats[2];  // running max, running sum
    extern __shared__ double acc[];  // Dv running numerators
    for (int64_t row = blockIdx.x; row < N * Tq; row += gridDim.x) {
        int64_t n = row / Tq, i = row % Tq;
        const T* q = q_all + row * D;
        const T* k = k_all + n * S * D;
        const T* v = v_all + n * S * Dv;
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) acc[e] = 0;
        if (threadIdx.x == 0) {
            stats[0] = -INFINITY;
            stats[1] = 0;
        }
        __syncthreads();
        int64_t keys = visible_keys(causal, i, S);
        for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
            int64_t j = j0 + threadIdx.x;
            double s = -INFINITY;
            if (j < keys) {
                double dot = 0;
                for (int64_t d = 0; d < D; ++d) dot += (double)q[d] * k[j * D + d];
                s = scale * dot;
            }
            double m_old = stats[0];
            double m_new = fmax(m_old, block_max(s));
            double p = j < keys ? exp(s - m_new) : 0.0;
            p_tile[threadIdx.x] = p;
            double tile_sum = block_sum(p);  // (its barriers also publish p_tile)
            double rescale = exp(m_old - m_new);  // 0 on the first tile (m_old = -inf)
            int64_t count = keys - j0 < kTile ? keys - j0 : kTile;
            for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) {
                double a = acc[e] * rescale;
                for (int64_t t = 0; t < count; ++t) a += p_tile[t] * v[(j0 + t) * Dv + e];
                acc[e] = a;
            }
            __syncthreads();  // everyone has read stats and p_tile
            if (threadIdx.x == 0) {
                stats[0] = m_new;
                stats[1] = stats[1] * rescale + tile_sum;
            }
            __syncthreads();
        }
        double l = stats[1];
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) out_all[row * Dv + e] = (T)(l > 0 ? acc[e] / l : 0.0);
        if (threadIdx.x == 0) lse_all[row] = (T)(stats[0] + log(l));
        __syncthreads();
    }
}

template <typename T>
__global__ void attention_backward_kernel(const T* dout_all, const T* q_all, const T* k_all, const T* v_all,
                                          const T* out_all, const T* lse_all, T* dq_all, T* dk_all, T* dv_all,
                                          int64_t N, int64_t Tq, int64_t S, int64_t D, int64_t Dv, bool causal,
                                          double scale) {
    __shared__ double ds_tile[kTile];
    for (int64_t row = blockIdx.x; row < N * Tq; row += gridDim.x) {
        int64_t n = row / Tq, i = row % Tq;
        const T *q = q_all + row * D, *dout = dout_all + row * Dv, *out = out_all + row * Dv;
        const T* k = k_all + n * S * D;
        const T* v = v_all + n * S * Dv;
        T* dk = dk_all + n * S * D;
        T* dv = dv_all + n * S * Dv;
        double L = lse_all[row];
        double part = 0;
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) part += (double)dout[e] * out[e];
        double Dsum = block_sum(part);
        int64_t keys = visible_keys(causal, i, S);
        for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
            int64_t j = j0 + threadIdx.x;
            double ds = 0;
            if (j < keys) {
                double dot = 0, dp = 0;
                for (int64_t d = 0; d < D; ++d) dot += (double)q[d] * k[j * D + d];
                for (int64_t e = 0; e < Dv; ++e) dp += (double)dout[e] * v[j * Dv + e];
                double p = exp(scale * dot - L);
                ds = p * (dp - Dsum);
                // This thread owns key j for this query: its dk and dv contributions.
                for (int64_t d = 0; d < D; ++d) atomicAdd(&dk[j * D + d], (T)(scale * ds * q[d]));
                for (int64_t e = 0; e < Dv; ++e) atomicAdd(&dv[j * Dv + e], (T)(p * dout[e]));
            }
            ds_tile[threadIdx.x] = ds;
            __syncthreads();
            int64_t count = keys - j0 < kTile ? keys - j0 : kTile;
            for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
                double g = 0;
                for (int64_t t = 0; t < count; ++t) g += ds_tile[t] * k[(j0 + t) * D + d];
                dq_all[row * D + d] += (T)(scale * g);
            }
            __syncthreads();
        }
    }
}

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
               const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    if (N * Tq == 0) return;
    int blocks = (int)std::min<int64_t>(N * Tq, 65535);
    size_t shared = (size_t)Dv * sizeof(double);
    if (q.dtype() == kFloat32)
        attention_forward_kernel<<<blocks, kTile, shared, stream()>>>(
            static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
            static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
            static_cast<float*>(logsumexp.raw_data()), N, Tq, S, D, Dv, causal, scale);
    else
        attention_forward_kernel<<<blocks, kTile, shared, stream()>>>(
            static_cast<const double*>(q.raw_data()), static_cast<const double*>(k.raw_data()),
            static_cast<const double*>(v.raw_data()), static_cast<double*>(out.raw_data()),
            static_cast<double*>(logsumexp.raw_data()), N, Tq, S, D, Dv, causal, scale);
    check_launch("attention_forward_kernel");
}

void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& logsumexp, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    fill(dq, 0.0);
    fill(dk, 0.0);
    fill(dv, 0.0);
    if (N * Tq == 0) return;
    int blocks = (int)std::min<int64_t>(N * Tq, 65535);
    if (q.dtype() == kFloat32)
        attention_backward_kernel<<<blocks, kTile, 0, stream()>>>(
            static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
            static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
            static_cast<const float*>(out.raw_data()), static_cast<const float*>(logsumexp.raw_data()),
            static_cast<float*>(dq.raw_data()), static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()),
            N, Tq, S, D, Dv, causal, scale);
    else
        attention_backward_kernel<<<blocks, kTile, 0, stream()>>>(
            static_cast<const double*>(dout.raw_data()), static_cast<const double*>(q.raw_data()),
            static_cast<const double*>(k.raw_data()), static_cast<const double*>(v.raw_data()),
            static_cast<const double*>(out.raw_data()), static_cast<const double*>(logsumexp.raw_data()),
            static_cast<double*>(dq.raw_data()), static_cast<double*>(dk.raw_data()),
            static_cast<double*>(dv.raw_data()), N, Tq, S, D, Dv, causal, scale);
    check_launch("attention_backward_kernel");
}

}  // namespace cuda
}  // namespace nc
