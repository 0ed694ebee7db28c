// reduce_kernels.cuh — the GPU's reduction kernels: row sums (a block
// per row, or a few long rows cut into chunks), max/argmax, softmax, and
// the two passes of column sums. Launched by reduce.cu and column_sums.cuh;
// in a header of their own so that the CPU emulator (tests/cuda_emulator)
// runs these very kernels in CI. Sums accumulate in double, as on the CPU.
//
// Shapes: in [rows, n] -> out [rows] (sum, max, argmax) or [rows, n]
// (softmax); column sums: terms [rows, cols] -> out [cols].
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "cuda/device_common.cuh"

namespace nc {
namespace cuda {

// ---- row reductions --------------------------------------------------------------

// out[r] = sum_i x[r, i]. Also the chunked sum's second pass below, with
// In = double: the chunks' partial sums of each row.
template <typename In, typename Out>
__global__ void sum_rows_kernel(const In* x, Out* out, int64_t rows, int64_t n) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double total = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) total += x[r * n + i];
        total = block_sum(total);
        if (threadIdx.x == 0) out[r] = (Out)total;
    }
}

// With one block per row, a full reduction (one row: clip_grad_norm's sum
// of squares over GPT-2's 38.6M-element embedding gradient) would run on one
// SM. When there are few rows and they are long, each row is cut into
// chunks, one block per chunk (blockIdx.y the row), and sum_rows_kernel
// then adds each row's chunk sums.
constexpr int64_t kFewRows = 64;             // fewer rows than about half the SMs of a large GPU
constexpr int64_t kLongRow = 1 << 16;        // worth splitting
constexpr int64_t kChunkElements = 1 << 14;  // 64 per thread of a 256-thread block
constexpr int64_t kMostChunks = 1024;

template <typename T>
__global__ void sum_row_chunks_kernel(const T* x, double* partial, int64_t n, int64_t per_chunk) {
    int64_t r = blockIdx.y, chunk = blockIdx.x;
    int64_t begin = chunk * per_chunk, end = begin + per_chunk < n ? begin + per_chunk : n;
    double total = 0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) total += x[r * n + i];
    total = block_sum(total);
    if (threadIdx.x == 0) partial[r * gridDim.x + chunk] = total;
}

// Max / Argmax, one block per row (argmax over GPT-2's 50,257 logits is 197
// loads per thread, not 50,257 on one thread). Each thread keeps the best of
// its strided elements, then the block combines pairs by the CPU's rule: a
// NaN beats any number and an earlier NaN a later one; otherwise the larger
// value wins, and of equal values the earlier. That picks the same element
// in any order of combining, so it is the CPU's left-to-right scan's answer
// (the first NaN if there is one, else the first maximum).
template <typename T>
__device__ bool beats(T v, int64_t i, T best, int64_t best_i) {
    bool v_nan = v != v, best_nan = best != best;
    if (v_nan || best_nan) return v_nan && (!best_nan || i < best_i);
    return v > best || (v == best && i < best_i);
}

template <typename T>
__global__ void max_rows_kernel(const T* x, T* max_out, int64_t* arg_out, int64_t rows, int64_t n) {
    __shared__ T values[kThreads];
    __shared__ int64_t indices[kThreads];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * n;
        T best = row[0];  // a real element, so threads past the row's end hold a valid candidate
        int64_t best_i = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            if (beats(row[i], i, best, best_i)) best = row[i], best_i = i;
        values[threadIdx.x] = best;
        indices[threadIdx.x] = best_i;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half /= 2) {  // blockDim.x is a power of 2
            int t = threadIdx.x;
            if (t < half && beats(values[t + half], indices[t + half], values[t], indices[t]))
                values[t] = values[t + half], indices[t] = indices[t + half];
            __syncthreads();
        }
        // Only thread 0 reads element 0 here and writes it for the next
        // row, and the others' writes for the next row touch elements 1..:
        // the tree's last barrier is enough, and the next row needs none.
        if (threadIdx.x == 0) {
            if (max_out) max_out[r] = values[0];
            if (arg_out) arg_out[r] = indices[0];
        }
    }
}

template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t n, bool log_softmax) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        double m = -INFINITY;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmax(m, (double)xr[i]);
        m = block_max(m);
        double total = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) total += exp_shifted(xr[i], m);
        total = block_sum(total);
        double shift = m + log(total);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            yr[i] = log_softmax ? (T)((double)xr[i] - shift) : (T)exp_shifted(xr[i], shift);
    }
}

// Chunks for a row of n elements split across blocks (sum_row_chunks_kernel).
inline int64_t row_chunks(int64_t n) { return std::min(kMostChunks, (n + kChunkElements - 1) / kChunkElements); }

// ---- column sums: out[c] = sum over rows r of term(r, c) --------------------------
//
// One thread per column walking every row is coalesced but leaves the GPU
// nearly empty: a [8192, 768] gradient is 768 threads, 3 blocks on a
// 132-SM GPU. So the sum runs in two passes:
//   1. a grid of (column tiles of 32) x (row chunks) blocks of 32 x 8
//      threads; the 32 threads of a warp read 32 neighbouring columns of
//      one row (coalesced), the 8 warps take every 8th row of the chunk, and
//      the block adds its 8 partial sums into partial[chunk, column];
//   2. one thread per column adds its chunks' partials.

constexpr int kColumnTile = 32;  // columns per block (one warp's width)
constexpr int kRowLanes = 8;     // rows a block reads at once (its warps)

template <typename Term>
__global__ void column_partials_kernel(Term term, double* partial, int64_t rows, int64_t cols, int64_t rows_per_chunk) {
    __shared__ double lanes[kRowLanes][kColumnTile];
    int64_t c = (int64_t)blockIdx.x * kColumnTile + threadIdx.x;
    int64_t begin = (int64_t)blockIdx.y * rows_per_chunk;
    int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    double total = 0;
    if (c < cols)
        for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) total += term(r, c);
    lanes[threadIdx.y][threadIdx.x] = total;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        double sum = 0;
        for (int k = 0; k < kRowLanes; ++k) sum += lanes[k][threadIdx.x];
        partial[(int64_t)blockIdx.y * cols + c] = sum;
    }
}

template <typename T>
__global__ void column_finish_kernel(const double* partial, T* out, int64_t chunks, int64_t cols) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x) {
        double sum = 0;
        for (int64_t k = 0; k < chunks; ++k) sum += partial[k * cols + c];
        out[c] = (T)sum;
    }
}

// Row chunks: about 1024 blocks in all (several per SM), each chunk at
// least 64 rows (8 per warp), and never more than the grid's y limit.
inline int64_t column_chunks(int64_t rows, int64_t cols) {
    int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
    int64_t wanted = std::max<int64_t>(1, 1024 / tiles);
    int64_t most = std::max<int64_t>(1, rows / 64);
    return std::min<int64_t>(std::min(wanted, most), 65535);
}

// The plain column sum: term(r, c) = x[r, c].
template <typename T>
struct MatrixEntry {
    const T* x;
    int64_t cols;
    __device__ double operator()(int64_t r, int64_t c) const { return (double)x[r * cols + c]; }
};

}  // namespace cuda
}  // namespace nc
