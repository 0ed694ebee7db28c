// attention.cu — scaled dot-product attention on the GPU with an online
// softmax (the algorithm of tensor/ops/attention.cpp and FlashAttention),
// forward and backward, never storing the T x S probabilities.
//
// Two versions. The *tiled* kernels run float32 with q, k and v all 16, 32
// or 64 wide (every head of the models here); the *simple* kernels run
// everything else (float64, for gradcheck, and other widths), and they are
// the reference the parity tests compare the tiled ones with.
// NORMCORE_ATTENTION=simple in the environment makes every call simple.
//
// Shapes: q [N, T, D], k [N, S, D], v [N, S, Dv], out [N, T, Dv],
// logsumexp [N, T], with N = B H (batch times heads); HD = D = Dv in the tiled kernels.
//
// Tiled forward: a block owns 64 queries of one (batch x head), one thread
// per query, holding q (pre-multiplied by the scale) and its output row in
// registers. The block walks the keys in tiles of 64, each tile of k and v
// loaded once into shared memory and read by all 64 threads (every thread
// reads the same address at the same time: a broadcast, no bank
// conflicts). Per key, the thread updates its running max m, sum l and
// output o; o and l are rescaled only when the max grows, which after the
// first few keys is rare.
//
// Tiled backward (FlashAttention-2's order): a block owns 32 keys, one
// thread per key, with dk and dv in registers, so they need no atomics. It
// walks the query rows in tiles of 32 (causal: only rows that can see its
// keys). For each row it recomputes p = exp(scale q.k - L), dp = dout.v,
// ds = p (dp - D) with D = dout.out, and adds p dout to dv and ds q to dk.
// The tile's ds go to shared memory, and dq = scale ds k for the tile's rows
// is then summed over the block's 32 keys and added to global memory: one
// atomicAdd per (row, dim, block of keys), not per key.
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

// ---- tiled float32 kernels ---------------------------------------------------------

constexpr int kForwardRows = 64;   // queries per block (one thread each)
constexpr int kForwardKeys = 64;   // keys per shared-memory tile
constexpr int kBackwardKeys = 32;  // keys per block (one thread each)
constexpr int kBackwardRows = 32;  // queries per shared-memory tile

// Grid: (N, query tiles). Block: kForwardRows threads.
template <int HD>
__global__ void attention_forward_tiled(const float* q_all, const float* k_all, const float* v_all, float* out_all,
                                        float* lse_all, int64_t Tq, int64_t S, bool causal, float scale) {
    __shared__ float k_tile[kForwardKeys][HD];
    __shared__ float v_tile[kForwardKeys][HD];
    const int64_t n = blockIdx.x, i0 = (int64_t)blockIdx.y * kForwardRows, i = i0 + threadIdx.x;
    const bool active = i < Tq;
    const float* k = k_all + n * S * HD;
    const float* v = v_all + n * S * HD;
    float q[HD], o[HD];
#pragma unroll
    for (int d = 0; d < HD; ++d) {
        q[d] = active ? q_all[(n * Tq + i) * HD + d] * scale : 0.0f;
        o[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    // The keys some query of this block sees, and the ones this query sees.
    int64_t last_row = (i0 + kForwardRows < Tq ? i0 + kForwardRows : Tq) - 1;
    int64_t block_keys = causal ? (last_row + 1 < S ? last_row + 1 : S) : S;
    int64_t my_keys = causal ? (i + 1 < S ? i + 1 : S) : S;
    for (int64_t j0 = 0; j0 < block_keys; j0 += kForwardKeys) {
        int count = (int)(block_keys - j0 < kForwardKeys ? block_keys - j0 : kForwardKeys);
        for (int e = threadIdx.x; e < count * HD; e += blockDim.x) {
            k_tile[e / HD][e % HD] = k[j0 * HD + e];
            v_tile[e / HD][e % HD] = v[j0 * HD + e];
        }
        __syncthreads();
        int64_t visible = my_keys - j0 < count ? my_keys - j0 : count;  // <= 0 when causal hides the whole tile
        if (active)
            for (int t = 0; t < visible; ++t) {
                float s = 0.0f;
#pragma unroll
                for (int d = 0; d < HD; ++d) s += q[d] * k_tile[t][d];
                if (s > m) {  // a new max: rescale what was summed against the old one
                    float c = expf(m - s);  // 0 for the first key (m = -inf)
                    l *= c;
#pragma unroll
                    for (int d = 0; d < HD; ++d) o[d] *= c;
                    m = s;
                }
                float p = expf(s - m);
                l += p;
#pragma unroll
                for (int d = 0; d < HD; ++d) o[d] += p * v_tile[t][d];
            }
        __syncthreads();  // everyone is done with the tile before it is overwritten
    }
    if (!active) return;
#pragma unroll
    for (int d = 0; d < HD; ++d) out_all[(n * Tq + i) * HD + d] = l > 0.0f ? o[d] / l : 0.0f;
    lse_all[n * Tq + i] = m + logf(l);
}

// D_i = dout_i . out_i for every row (the softmax backward's correction).
template <int HD>
__global__ void attention_row_dots(const float* dout, const float* out, float* dots, int64_t rows) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
        float total = 0.0f;
#pragma unroll
        for (int d = 0; d < HD; ++d) total += dout[r * HD + d] * out[r * HD + d];
        dots[r] = total;
    }
}

// Grid: (N, key tiles). Block: kBackwardKeys threads. dq must start at 0;
// every row of dk and dv is written (once, by the block owning that key).
template <int HD>
__global__ void attention_backward_tiled(const float* dout_all, const float* q_all, const float* k_all,
                                         const float* v_all, const float* lse_all, const float* dots_all,
                                         float* dq_all, float* dk_all, float* dv_all, int64_t Tq, int64_t S,
                                         bool causal, float scale) {
    // Rows of k and v are padded by one float: thread t reads row t, and
    // with HD + 1 floats per row the 32 threads hit 32 different banks.
    __shared__ float k_tile[kBackwardKeys][HD + 1];
    __shared__ float v_tile[kBackwardKeys][HD + 1];
    __shared__ float q_tile[kBackwardRows][HD];
    __shared__ float dout_tile[kBackwardRows][HD];
    __shared__ float ds_tile[kBackwardRows][kBackwardKeys + 1];
    __shared__ float lse_tile[kBackwardRows], dots_tile[kBackwardRows];
    const int64_t n = blockIdx.x, j0 = (int64_t)blockIdx.y * kBackwardKeys, j = j0 + threadIdx.x;
    const int tid = threadIdx.x;
    const bool active = j < S;
    const int key_count = (int)(S - j0 < kBackwardKeys ? S - j0 : kBackwardKeys);
    for (int e = tid; e < key_count * HD; e += blockDim.x) {
        k_tile[e / HD][e % HD] = k_all[(n * S + j0) * HD + e];
        v_tile[e / HD][e % HD] = v_all[(n * S + j0) * HD + e];
    }
    float dk[HD], dv[HD];
#pragma unroll
    for (int d = 0; d < HD; ++d) dk[d] = dv[d] = 0.0f;
    // Causal: rows before j0 see none of these keys.
    for (int64_t i0 = causal ? j0 / kBackwardRows * kBackwardRows : 0; i0 < Tq; i0 += kBackwardRows) {
        int rows = (int)(Tq - i0 < kBackwardRows ? Tq - i0 : kBackwardRows);
        __syncthreads();  // the previous tile's q, dout and ds are no longer read (and k, v are loaded)
        for (int e = tid; e < rows * HD; e += blockDim.x) {
            q_tile[e / HD][e % HD] = q_all[(n * Tq + i0) * HD + e];
            dout_tile[e / HD][e % HD] = dout_all[(n * Tq + i0) * HD + e];
        }
        for (int r = tid; r < rows; r += blockDim.x) {
            lse_tile[r] = lse_all[n * Tq + i0 + r];
            dots_tile[r] = dots_all[n * Tq + i0 + r];
        }
        __syncthreads();
        // This thread's key against every row of the tile.
        for (int r = 0; r < rows; ++r) {
            float ds = 0.0f;
            if (active && (!causal || j <= i0 + r)) {
                float s = 0.0f, dp = 0.0f;
#pragma unroll
                for (int d = 0; d < HD; ++d) {
                    s += q_tile[r][d] * k_tile[tid][d];
                    dp += dout_tile[r][d] * v_tile[tid][d];
                }
                float p = expf(scale * s - lse_tile[r]);
                ds = p * (dp - dots_tile[r]);
#pragma unroll
                for (int d = 0; d < HD; ++d) {
                    dv[d] += p * dout_tile[r][d];
                    dk[d] += ds * q_tile[r][d];
                }
            }
            ds_tile[r][tid] = ds;
        }
        __syncthreads();
        // dq of the tile's rows from this block's keys: scale sum_t ds[r][t] k[t].
        for (int e = tid; e < rows * HD; e += blockDim.x) {
            int r = e / HD, d = e % HD;
            float total = 0.0f;
            for (int t = 0; t < key_count; ++t) total += ds_tile[r][t] * k_tile[t][d];
            atomicAdd(&dq_all[(n * Tq + i0 + r) * HD + d], scale * total);
        }
    }
    if (!active) return;
#pragma unroll
    for (int d = 0; d < HD; ++d) {
        dk_all[(n * S + j) * HD + d] = scale * dk[d];
        dv_all[(n * S + j) * HD + d] = dv[d];
    }
}

// The head width the tiled kernels were compiled for, or 0: float32, q, k
// and v equally wide, 16, 32 or 64, and no NORMCORE_ATTENTION=simple.
int tiled_head_dim(const Tensor& q, const Tensor& k, const Tensor& v) {
    const char* choice = std::getenv("NORMCORE_ATTENTION");
    if (choice && std::string(choice) == "simple") return 0;
    int64_t D = q.size(2);
    if (q.dtype() != kFloat32 || k.size(2) != D || v.size(2) != D) return 0;
    return D == 16 || D == 32 || D == 64 ? (int)D : 0;
}

// The tiled kernels' grid: one column per (batch x head), one row per tile
// of queries (forward) or keys (backward). CUDA allows 2^31 - 1 columns and
// 65,535 rows; a larger grid would be cut, silently, by the casts.
dim3 tiled_grid(int64_t N, int64_t tiles, const char* kernel) {
    if (N > INT_MAX || tiles > 65535)
        throw Error(std::string("attention (CUDA): ") + kernel + " needs a grid of " + std::to_string(N) + " x " +
                    std::to_string(tiles) + " blocks, beyond CUDA's 2^31 - 1 x 65535 (fewer batch x heads, or a shorter sequence)");
    return dim3((unsigned)N, (unsigned)tiles);
}

template <int HD>
void launch_forward_tiled(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float scale,
                          const Tensor& out, const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1);
    dim3 grid = tiled_grid(N, (Tq + kForwardRows - 1) / kForwardRows, "attention_forward_tiled");
    attention_forward_tiled<HD><<<grid, kForwardRows, 0, stream()>>>(
        static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
        static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
        static_cast<float*>(logsumexp.raw_data()), Tq, S, causal, scale);
    check_launch("attention_forward_tiled");
}

template <int HD>
void launch_backward_tiled(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                           const Tensor& logsumexp, bool causal, float scale, const Tensor& dq, const Tensor& dk,
                           const Tensor& dv) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), rows = N * Tq;
    fill(dq, 0.0);
    if (N * S == 0) return;  // nothing to do (and no empty grid to launch)
    // D_i for every row, in a scratch buffer. Freeing it right after the
    // launches is safe: any later use of the block is queued behind them.
    float* dots = static_cast<float*>(allocate((size_t)rows * sizeof(float)));
    attention_row_dots<HD><<<blocks_for(rows), kThreads, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(out.raw_data()), dots, rows);
    check_launch("attention_row_dots");
    dim3 grid = tiled_grid(N, (S + kBackwardKeys - 1) / kBackwardKeys, "attention_backward_tiled");
    attention_backward_tiled<HD><<<grid, kBackwardKeys, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
        static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
        static_cast<const float*>(logsumexp.raw_data()), dots, static_cast<float*>(dq.raw_data()),
        static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()), Tq, S, causal, scale);
    deallocate(dots);
    check_launch("attention_backward_tiled");
}

}  // namespace

static void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
               const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    if (N * Tq == 0) return;
    switch (tiled_head_dim(q, k, v)) {
        case 16: return launch_forward_tiled<16>(q, k, v, causal, (float)scale, out, logsumexp);
        case 32: return launch_forward_tiled<32>(q, k, v, causal, (float)scale, out, logsumexp);
        case 64: return launch_forward_tiled<64>(q, k, v, causal, (float)scale, out, logsumexp);
        default: break;  // the simple kernel below
    }
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
    switch (tiled_head_dim(q, k, v)) {
        case 16: return launch_backward_tiled<16>(dout, q, k, v, out, logsumexp, causal, (float)scale, dq, dk, dv);
        case 32: return launch_backward_tiled<32>(dout, q, k, v, out, logsumexp, causal, (float)scale, dq, dk, dv);
        case 64: return launch_backward_tiled<64>(dout, q, k, v, out, logsumexp, causal, (float)scale, dq, dk, dv);
        default: break;  // the simple kernel below
    }
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
