// attention_tiled.cuh — the float32 attention kernels every model here
// runs on the GPU (cuda/attention.cu launches them): FlashAttention's
// online softmax forward and FlashAttention-2's backward, never storing
// the T x S probabilities. In a header of their own so that the CPU
// emulator (tests/cuda_emulator) can run these very kernels in CI.
//
// Shapes: q [N, T, D], k [N, S, D], v [N, S, Dv], out [N, T, Dv],
// logsumexp [N, T], with N = B H (batch times heads). D is 16, 32, 64 or
// 128, and Dv is D or 2 D (differential attention's sub-heads) up to 128.
// The operands are views, each found through its MatrixLayout
// (tensor/matrix_layout.h); logsumexp and the row dots are contiguous.
//
// Splitting a row across a group of threads. One thread per query (or per
// key) would hold a whole row of q and out (or of dk and dv) in registers:
// 128 floats at D = 64, 256 at D = 128, which spills. Here a query's (or
// key's) row is shared by `group` neighbouring threads of one warp, so
// every thread holds 16 elements of the wider of q and v: lane g of the
// group owns elements g, g + group, g + 2 group, ... The group forms a dot
// product q . k from its lanes' partial sums with __shfl_xor_sync, a
// butterfly that leaves the same sum, bit for bit, in every lane (each
// step adds the same two numbers in either order). Interleaving the lanes'
// elements keeps shared-memory reads conflict-free: at one moment the
// lanes of a group read neighbouring floats (different banks) and the
// groups of a warp read the same ones (a broadcast).
//
// Every thread of a block runs the same number of key (or row) steps, even
// where causal masking or a partial tile makes its step a no-op: a
// shuffle needs all 32 lanes of the warp to arrive at it.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/attention_strides.cuh"

namespace nc {
namespace cuda {

// How the tiled kernels cut the work for widths D (q, k) and Dv (v).
// The tiles are sized so that a block's static shared memory stays within
// CUDA's 48 KiB (no opt-in needed) and a thread holds about 64 floats.
template <int D, int Dv>
struct AttentionTiles {
    static constexpr int group = (D > Dv ? D : Dv) / 16;  // threads per query or key: 1, 2, 4 or 8
    static constexpr int qk_part = D / group;               // elements of q or k per thread
    static constexpr int v_part = Dv / group;               // elements of v or out per thread
    // Forward: queries per block; keys per shared-memory tile of k and v.
    static constexpr int forward_queries = 64;
    static constexpr int forward_keys = D + Dv <= 128 ? 64 : 32;
    static constexpr int forward_threads = forward_queries * group;
    // Backward: keys per block; query rows per shared-memory tile.
    static constexpr int backward_keys = D == 128 ? 32 : 64;
    static constexpr int backward_rows = D + Dv <= 128 ? 32 : 16;
    static constexpr int backward_threads = backward_keys * group;
    static_assert(D % group == 0 && Dv % group == 0 && group <= 32, "a group lives inside one warp");
};

__host__ __device__ inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// The sum of x over the `group` lanes of this thread's group (all of them get it).
template <int group>
__device__ inline float group_sum(float x) {
    for (int offset = group / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

// Forward. Grid: (N, query tiles). Block: forward_threads.
// Each group keeps its query (already multiplied by the scale) and its
// output row in registers; the block walks the keys in shared-memory tiles,
// and per key each query updates its running max m, sum l and output o:
//   s = q.k;  if s > m: c = e^(m - s), l *= c, o *= c, m = s;  p = e^(s - m), l += p, o += p v.
// The end writes o / l and L = m + log l (the logsumexp backward needs).
template <int D, int Dv>
__global__ void __launch_bounds__(AttentionTiles<D, Dv>::forward_threads)
attention_forward_tiled(const float* q_all, const float* k_all, const float* v_all, float* out_all, float* lse_all,
                        int64_t Tq, int64_t S, bool causal, float scale, ForwardLayouts at) {
    using Tiles = AttentionTiles<D, Dv>;
    constexpr int G = Tiles::group, KEYS = Tiles::forward_keys;
    __shared__ float k_tile[KEYS][D];
    __shared__ float v_tile[KEYS][Dv];
    const int tid = threadIdx.x, g = tid % G;
    const int64_t n = blockIdx.x, i0 = (int64_t)blockIdx.y * Tiles::forward_queries, i = i0 + tid / G;
    const bool active = i < Tq;
    const float* q_rows = q_all + at.q.matrix(n);
    const float* k = k_all + at.k.matrix(n);
    const float* v = v_all + at.v.matrix(n);
    float q[Tiles::qk_part], o[Tiles::v_part];
#pragma unroll
    for (int u = 0; u < Tiles::qk_part; ++u) q[u] = active ? q_rows[i * at.q.row_stride + g + G * u] * scale : 0.0f;
#pragma unroll
    for (int u = 0; u < Tiles::v_part; ++u) o[u] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    // The keys some query of this block sees, and the ones this query sees.
    int64_t last_row = smaller(i0 + Tiles::forward_queries, Tq) - 1;
    int64_t block_keys = causal ? smaller(last_row + 1, S) : S;
    int64_t my_keys = causal ? smaller(i + 1, S) : S;
    for (int64_t j0 = 0; j0 < block_keys; j0 += KEYS) {
        int count = (int)smaller(block_keys - j0, KEYS);
        for (int e = tid; e < count * D; e += blockDim.x) k_tile[e / D][e % D] = k[(j0 + e / D) * at.k.row_stride + e % D];
        for (int e = tid; e < count * Dv; e += blockDim.x)
            v_tile[e / Dv][e % Dv] = v[(j0 + e / Dv) * at.v.row_stride + e % Dv];
        __syncthreads();
        for (int t = 0; t < count; ++t) {
            float s = 0.0f;
#pragma unroll
            for (int u = 0; u < Tiles::qk_part; ++u) s += q[u] * k_tile[t][g + G * u];
            s = group_sum<G>(s);
            if (!active || j0 + t >= my_keys) continue;  // masked (after the shuffle, which needs every lane)
            if (s > m) {  // a new max: rescale what was summed against the old one
                float c = expf(m - s);  // 0 for the first key (m = -inf)
                l *= c;
#pragma unroll
                for (int u = 0; u < Tiles::v_part; ++u) o[u] *= c;
                m = s;
            }
            float p = expf(s - m);
            l += p;
#pragma unroll
            for (int u = 0; u < Tiles::v_part; ++u) o[u] += p * v_tile[t][g + G * u];
        }
        __syncthreads();  // everyone is done with the tile before it is overwritten
    }
    if (!active) return;
#pragma unroll
    for (int u = 0; u < Tiles::v_part; ++u)
        out_all[at.out.matrix(n) + i * at.out.row_stride + g + G * u] = l > 0.0f ? o[u] / l : 0.0f;
    if (g == 0) lse_all[n * Tq + i] = m + logf(l);
}

// D_i = dout_i . out_i for every row r = n Tq + i (the softmax backward's
// correction), into a contiguous [N, Tq].
template <int Dv>
__global__ void attention_row_dots(const float* dout_all, const float* out_all, float* dots, int64_t rows, int64_t Tq,
                                   BackwardLayouts at) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
        const float* dout = dout_all + at.dout.matrix(r / Tq) + r % Tq * at.dout.row_stride;
        const float* out = out_all + at.out.matrix(r / Tq) + r % Tq * at.out.row_stride;
        float total = 0.0f;
#pragma unroll
        for (int e = 0; e < Dv; ++e) total += dout[e] * out[e];
        dots[r] = total;
    }
}

// Backward, FlashAttention-2's order. Grid: (N, key tiles). Block:
// backward_threads. A block owns backward_keys keys, each key's dk and dv
// in its group's registers: no other block touches them, so no atomics.
// The block walks the query rows in shared-memory tiles (causal: only rows
// that see its keys), and per row each key recomputes
//   p = e^(scale q.k - L),  dp = dout.v,  ds = p (dp - D_i),
// then adds p dout to dv and ds q to dk. The tile's ds go to shared memory,
// and dq = scale sum_j ds_j k_j over the block's keys is added to global
// memory: one atomicAdd per (row, element, block of keys), not per key.
// dq must start at 0; every row of dk and dv is written once.
template <int D, int Dv>
__global__ void __launch_bounds__(AttentionTiles<D, Dv>::backward_threads)
attention_backward_tiled(const float* dout_all, const float* q_all, const float* k_all, const float* v_all,
                         const float* lse_all, const float* dots_all, float* dq_all, float* dk_all, float* dv_all,
                         int64_t Tq, int64_t S, bool causal, float scale, BackwardLayouts at) {
    using Tiles = AttentionTiles<D, Dv>;
    constexpr int G = Tiles::group, KEYS = Tiles::backward_keys, ROWS = Tiles::backward_rows;
    __shared__ float k_tile[KEYS][D];  // the block's keys, for dq
    __shared__ float q_tile[ROWS][D];
    __shared__ float dout_tile[ROWS][Dv];
    __shared__ float ds_tile[ROWS][KEYS];
    __shared__ float lse_tile[ROWS], dots_tile[ROWS];
    const int tid = threadIdx.x, g = tid % G, key = tid / G;  // key: this group's key within the block
    const int64_t n = blockIdx.x, j0 = (int64_t)blockIdx.y * KEYS, j = j0 + key;
    const bool active = j < S;
    const int key_count = (int)smaller(S - j0, KEYS);
    // This head's matrices (MatrixLayout, tensor/matrix_layout.h).
    const float *dout_rows = dout_all + at.dout.matrix(n), *q_rows = q_all + at.q.matrix(n);
    const float *k_rows = k_all + at.k.matrix(n), *v_rows = v_all + at.v.matrix(n);
    float* dq_rows = dq_all + at.dq.matrix(n);
    for (int e = tid; e < key_count * D; e += blockDim.x)
        k_tile[e / D][e % D] = k_rows[(j0 + e / D) * at.k.row_stride + e % D];
    float k[Tiles::qk_part], v[Tiles::v_part], dk[Tiles::qk_part], dv[Tiles::v_part];
#pragma unroll
    for (int u = 0; u < Tiles::v_part; ++u) {
        v[u] = active ? v_rows[j * at.v.row_stride + g + G * u] : 0.0f;
        dv[u] = 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < Tiles::qk_part; ++u) {
        k[u] = active ? k_tile[key][g + G * u] : 0.0f;
        dk[u] = 0.0f;
    }
    // Causal: rows before j0 see none of these keys.
    for (int64_t i0 = causal ? j0 / ROWS * ROWS : 0; i0 < Tq; i0 += ROWS) {
        int rows = (int)smaller(Tq - i0, ROWS);
        // No barrier needed before overwriting the previous tile's q and
        // dout: every thread passed the one before the dq loop, so all are
        // done reading them, and the dq loop reads only k_tile and ds_tile.
        for (int e = tid; e < rows * D; e += blockDim.x)
            q_tile[e / D][e % D] = q_rows[(i0 + e / D) * at.q.row_stride + e % D];
        for (int e = tid; e < rows * Dv; e += blockDim.x)
            dout_tile[e / Dv][e % Dv] = dout_rows[(i0 + e / Dv) * at.dout.row_stride + e % Dv];
        for (int r = tid; r < rows; r += blockDim.x) {
            lse_tile[r] = lse_all[n * Tq + i0 + r];
            dots_tile[r] = dots_all[n * Tq + i0 + r];
        }
        __syncthreads();
        for (int r = 0; r < rows; ++r) {
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int u = 0; u < Tiles::qk_part; ++u) s += q_tile[r][g + G * u] * k[u];
#pragma unroll
            for (int u = 0; u < Tiles::v_part; ++u) dp += dout_tile[r][g + G * u] * v[u];
            s = group_sum<G>(s);
            dp = group_sum<G>(dp);
            bool visible = active && (!causal || j <= i0 + r);
            float p = visible ? expf(scale * s - lse_tile[r]) : 0.0f;
            float ds = visible ? p * (dp - dots_tile[r]) : 0.0f;
#pragma unroll
            for (int u = 0; u < Tiles::v_part; ++u) dv[u] += p * dout_tile[r][g + G * u];
#pragma unroll
            for (int u = 0; u < Tiles::qk_part; ++u) dk[u] += ds * q_tile[r][g + G * u];
            if (g == 0) ds_tile[r][key] = ds;
        }
        __syncthreads();
        // dq of the tile's rows from this block's keys: scale sum_t ds[r][t] k[t].
        for (int e = tid; e < rows * D; e += blockDim.x) {
            int r = e / D, d = e % D;
            float total = 0.0f;
            for (int t = 0; t < key_count; ++t) total += ds_tile[r][t] * k_tile[t][d];
            atomicAdd(&dq_rows[(i0 + r) * at.dq.row_stride + d], scale * total);
        }
    }
    if (!active) return;
#pragma unroll
    for (int u = 0; u < Tiles::qk_part; ++u) dk_all[at.dk.matrix(n) + j * at.dk.row_stride + g + G * u] = scale * dk[u];
#pragma unroll
    for (int u = 0; u < Tiles::v_part; ++u) dv_all[at.dv.matrix(n) + j * at.dv.row_stride + g + G * u] = dv[u];
}

// The tiled kernels' grids: one column per (batch x head), one row per tile
// of queries (forward) or keys (backward). CUDA allows 2^31 - 1 columns
// and 65,535 rows; `fits` says whether the grid does.
struct TiledGrid {
    int64_t columns, rows;
    bool fits() const { return columns <= 2147483647 && rows <= 65535; }
    dim3 dims() const { return dim3((unsigned)columns, (unsigned)rows); }
};
template <int D, int Dv>
TiledGrid forward_grid(int64_t N, int64_t Tq) {
    constexpr int per_block = AttentionTiles<D, Dv>::forward_queries;
    return {N, (Tq + per_block - 1) / per_block};
}
template <int D, int Dv>
TiledGrid backward_grid(int64_t N, int64_t S) {
    constexpr int per_block = AttentionTiles<D, Dv>::backward_keys;
    return {N, (S + per_block - 1) / per_block};
}

}  // namespace cuda
}  // namespace nc
