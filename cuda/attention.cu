// attention.cu — scaled dot-product attention on the GPU with an online
// softmax (the algorithm of tensor/ops/attention.cpp and FlashAttention),
// forward and backward, never storing the T x S probabilities.
//
// Two versions. The *tiled* kernels (cuda/attention_tiled.cuh, where their
// algorithm is explained) run float32 with q and k 16, 32, 64 or 128 wide
// and v as wide or twice as wide: every head of the models here. The
// *simple* kernels below run everything else (float64, for gradcheck, and
// other widths), and they are the reference the parity tests compare the
// tiled ones with. NORMCORE_ATTENTION=simple in the environment makes
// every call simple.
//
// Shapes: q [N, T, D], k [N, S, D], v [N, S, Dv], out [N, T, Dv],
// logsumexp [N, T], with N = B H (batch times heads).
//
// Simple version, one thread block per (batch x head, query row): the block
// walks the keys in tiles of blockDim.x keys; each thread scores one key of
// the tile, the block updates the running max m and sum l, and each thread
// owns some output dimensions e and adds sum_j p_j v_j[e]. Its backward
// recomputes p per row in double precision and adds dk_j and dv_j with an
// atomicAdd of the tensor's own type (many query rows add to the same key),
// so a float32 run accumulates them in float32, in no fixed order.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

#include "cuda/attention_tiled.cuh"
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

// ---- launching the tiled float32 kernels (cuda/attention_tiled.cuh) ----------------

// Whether q, k and v have widths the tiled kernels were compiled for (see
// the dispatch below) and NORMCORE_ATTENTION=simple was not asked for.
bool use_tiled(const Tensor& q, const Tensor& k, const Tensor& v) {
    const char* choice = std::getenv("NORMCORE_ATTENTION");
    if (choice && std::string(choice) == "simple") return false;
    int64_t D = q.size(2), Dv = v.size(2);
    bool widths = (D == 16 || D == 32 || D == 64 || D == 128) && (Dv == D || (Dv == 2 * D && Dv <= 128));
    return q.dtype() == kFloat32 && k.size(2) == D && widths;
}

// A grid beyond CUDA's limits would be cut, silently, by the casts.
dim3 checked(const TiledGrid& grid, const char* kernel) {
    if (!grid.fits())
        throw Error(std::string("attention (CUDA): ") + kernel + " needs a grid of " + std::to_string(grid.columns) +
                    " x " + std::to_string(grid.rows) +
                    " blocks, beyond CUDA's 2^31 - 1 x 65535 (fewer batch x heads, or a shorter sequence)");
    return grid.dims();
}

template <int D, int Dv>
void launch_forward_tiled(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float scale, const Tensor& out,
                   const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1);
    dim3 grid = checked(forward_grid<D, Dv>(N, Tq), "attention_forward_tiled");
    attention_forward_tiled<D, Dv><<<grid, AttentionTiles<D, Dv>::forward_threads, 0, stream()>>>(
        static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
        static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
        static_cast<float*>(logsumexp.raw_data()), Tq, S, causal, scale);
    check_launch("attention_forward_tiled");
}

template <int D, int Dv>
void launch_backward_tiled(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& logsumexp, bool causal, float scale, const Tensor& dq, const Tensor& dk,
                    const Tensor& dv) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), rows = N * Tq;
    fill(dq, 0.0);
    if (N * S == 0) return;  // nothing to do (and no empty grid to launch)
    dim3 grid = checked(backward_grid<D, Dv>(N, S), "attention_backward_tiled");
    // D_i for every row, in a scratch buffer. Freeing it right after the
    // launches is safe: any later use of the block is queued behind them.
    float* dots = static_cast<float*>(allocate((size_t)rows * sizeof(float)));
    attention_row_dots<Dv><<<blocks_for(rows), kThreads, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(out.raw_data()), dots, rows);
    check_launch("attention_row_dots");
    attention_backward_tiled<D, Dv><<<grid, AttentionTiles<D, Dv>::backward_threads, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
        static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
        static_cast<const float*>(logsumexp.raw_data()), dots, static_cast<float*>(dq.raw_data()),
        static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()), Tq, S, causal, scale);
    deallocate(dots);
    check_launch("attention_backward_tiled");
}

// The widths the tiled kernels are compiled for: D = Dv (every head here)
// and Dv = 2 D (differential attention's sub-heads).
void run_forward_tiled(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float scale, const Tensor& out,
                     const Tensor& lse) {
    int64_t D = q.size(2), Dv = v.size(2);
    if (D == 16 && Dv == 16) return launch_forward_tiled<16, 16>(q, k, v, causal, scale, out, lse);
    if (D == 32 && Dv == 32) return launch_forward_tiled<32, 32>(q, k, v, causal, scale, out, lse);
    if (D == 64 && Dv == 64) return launch_forward_tiled<64, 64>(q, k, v, causal, scale, out, lse);
    if (D == 128 && Dv == 128) return launch_forward_tiled<128, 128>(q, k, v, causal, scale, out, lse);
    if (D == 16 && Dv == 32) return launch_forward_tiled<16, 32>(q, k, v, causal, scale, out, lse);
    if (D == 32 && Dv == 64) return launch_forward_tiled<32, 64>(q, k, v, causal, scale, out, lse);
    if (D == 64 && Dv == 128) return launch_forward_tiled<64, 128>(q, k, v, causal, scale, out, lse);
    throw Error("attention (CUDA): no tiled kernel for widths " + std::to_string(D) + " and " + std::to_string(Dv));
}

void run_backward_tiled(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& lse, bool causal, float scale, const Tensor& dq, const Tensor& dk,
                              const Tensor& dv) {
    int64_t D = q.size(2), Dv = v.size(2);
    if (D == 16 && Dv == 16) return launch_backward_tiled<16, 16>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 32 && Dv == 32) return launch_backward_tiled<32, 32>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 64 && Dv == 64) return launch_backward_tiled<64, 64>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 128 && Dv == 128) return launch_backward_tiled<128, 128>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 16 && Dv == 32) return launch_backward_tiled<16, 32>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 32 && Dv == 64) return launch_backward_tiled<32, 64>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 64 && Dv == 128) return launch_backward_tiled<64, 128>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    throw Error("attention (CUDA): no tiled kernel for widths " + std::to_string(D) + " and " + std::to_string(Dv));
}

}  // namespace

static void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
               const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    if (N * Tq == 0) return;
    if (use_tiled(q, k, v)) return run_forward_tiled(q, k, v, causal, (float)scale, out, logsumexp);
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

static void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& logsumexp, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    if (use_tiled(q, k, v))
        return run_backward_tiled(dout, q, k, v, out, logsumexp, causal, (float)scale, dq, dk, dv);
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

// The table entries of this file (cuda/cuda_backend.cu).
void add_attention(Backend& table) {
    table.attention = attention;
    table.attention_backward = attention_backward;
}

}  // namespace cuda
}  // namespace nc
