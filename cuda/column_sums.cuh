// column_sums.cuh — out[c] = sum over rows r of term(r, c), for a [rows,
// cols] grid of terms: the column sums of a matrix (a bias gradient) and the
// norms' gamma and beta gradients (sum_r dy xhat, sum_r dy).
//
// One thread per column walking every row is coalesced but leaves the GPU
// nearly empty: a [8192, 768] gradient is 768 threads, 3 blocks on a
// 132-SM GPU. So the sum runs in two passes:
//   1. a grid of (column tiles of 32) x (row chunks) blocks of 32 x 8
//      threads; the 32 threads of a warp read 32 neighbouring columns of
//      one row (coalesced), the 8 warps take every 8th row of the chunk, and
//      the block adds its 8 partial sums into partial[chunk, column];
//   2. one thread per column adds its chunks' partials.
// Sums accumulate in double, as on the CPU; only the order differs.
#pragma once

#include <algorithm>
#include <string>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "tensor/error.h"

namespace nc {
namespace cuda {

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

// out[c] = sum_r term(r, c). `name` names the kernels in launch errors.
template <typename T, typename Term>
void column_sums(const Term& term, T* out, int64_t rows, int64_t cols, const char* name) {
    if (cols == 0) return;
    int64_t chunks = column_chunks(rows, cols);
    int64_t per_chunk = (rows + chunks - 1) / chunks;
    int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
    if (tiles > 0x7fffffff) throw Error(std::string(name) + ": " + std::to_string(cols) + " columns are too many for one grid");
    // Freeing the scratch right after the launches is safe: any later use
    // of the block is queued behind them on the one stream.
    double* partial = static_cast<double*>(allocate((size_t)(chunks * cols) * sizeof(double)));
    column_partials_kernel<<<dim3((unsigned)tiles, (unsigned)chunks), dim3(kColumnTile, kRowLanes), 0, stream()>>>(
        term, partial, rows, cols, per_chunk);
    check_launch(name);
    column_finish_kernel<<<blocks_for(cols), kThreads, 0, stream()>>>(partial, out, chunks, cols);
    check_launch(name);
    deallocate(partial);
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
