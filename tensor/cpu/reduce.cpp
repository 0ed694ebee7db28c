// reduce.cpp — CPU kernels that work row by row: reductions and softmax.
//
// Both receive contiguous [rows, n] tensors (raw ops arrange that), so each
// row is a plain array and rows are split across threads.
//
// Shapes: in [rows, n] -> out [rows] (reductions) or [rows, n] (softmax);
// sum_columns: in [n, cols] -> out [cols].
#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/cpu/parallel.h"

namespace nc {
namespace cpu {

// A sum along a row is cut into pieces of kSumPiece numbers, each summed
// in lanes (sum_in_double), and the pieces' sums are added in order. A
// whole tensor is one long row (the gradient norm that clipping needs every
// step): its pieces are shared out among the threads. The pieces depend on
// the row's length alone, never on the number of threads or of rows, so a
// sum has the same bits with any thread count, and a row the same bits as
// the same numbers summed alone. In one running sum, a [1024, 256] gradient
// took 167 us, each addition waiting for the one before
// (bench/results/sum-pieces-2026-12-06.txt).
constexpr int64_t kSumPiece = 32768;

template <typename T>
static double sum_row(const T* x, int64_t n, bool parallel) {
    if (n <= kSumPiece) return sum_in_double(x, n);
    const int64_t pieces = (n + kSumPiece - 1) / kSumPiece;
    std::vector<double> piece_sums(pieces);
    parallel_for(pieces, parallel, [&](int64_t p) {
        piece_sums[p] = sum_in_double(x + p * kSumPiece, std::min(kSumPiece, n - p * kSumPiece));
    });
    double total = 0;
    for (double s : piece_sums) total += s;
    return total;
}

template <typename T>
static void reduce_typed(ReduceOp op, const Tensor& in, const Tensor& out) {
    int64_t rows = in.shape()[0], n = in.shape()[1];
    const T* x = static_cast<const T*>(in.raw_data());
    if (op == ReduceOp::Sum && rows == 1) {
        static_cast<T*>(out.raw_data())[0] = (T)sum_row(x, n, /*parallel=*/true);
        return;
    }
    parallel_for(rows, rows * n >= kParallelMin, [&](int64_t r) {
        const T* row = x + r * n;
        if (op == ReduceOp::Sum) {
            static_cast<T*>(out.raw_data())[r] = (T)sum_row(row, n, /*parallel=*/false);
            return;
        }
        // Max / Argmax: NaN wins (as in PyTorch), otherwise the first largest.
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i) {
            if (row[best] != row[best]) break;  // already NaN
            if (row[i] > row[best] || row[i] != row[i]) best = i;
        }
        if (op == ReduceOp::Max) static_cast<T*>(out.raw_data())[r] = row[best];
        else static_cast<int64_t*>(out.raw_data())[r] = best;
    });
}

static void reduce_rows(ReduceOp op, const Tensor& in, const Tensor& out) {
    if (in.dtype() == kFloat32) reduce_typed<float>(op, in, out);
    else reduce_typed<double>(op, in, out);
}

// out[j] = sum_i in[i, j]. Threads take blocks of columns (so no two write
// the same output); each keeps the block's running sums in double and walks
// the rows in order, reading every row's block contiguously.
//
// Blocks of 32 columns. Blocks of 128 left a 128-column output (a bias
// gradient of train's default model) to one thread; with at most 32
// columns GCC also writes the block out in full, eight AVX2 additions per
// row and no inner loop (the running sums still go through memory: the
// block's width is not known when compiling). Warm, on the Zen 3 (2
// threads, medians of 200 calls): 2048 x 128 from 33-48 to 18-24 us, 2048 x
// 384 from 86-124 to 59-67, 1024 x 1024 from 117-141 to 81-106; blocks of
// 16 were slower than 32, blocks of 64 level with it
// (bench/results/column-sums-2026-12-07.txt). Each column is still summed
// in row order, so the results are the same to the last bit.
template <typename T>
static void sum_columns_typed(const Tensor& in, const Tensor& out) {
    int64_t n = in.shape()[0], cols = in.shape()[1];
    const T* x = static_cast<const T*>(in.raw_data());
    T* y = static_cast<T*>(out.raw_data());
    constexpr int64_t block = 32;
    parallel_for((cols + block - 1) / block, n * cols >= kParallelMin, [&](int64_t piece) {
        const int64_t c0 = piece * block, width = std::min(block, cols - c0);
        double total[block] = {};
        for (int64_t i = 0; i < n; ++i) {
            const T* row = x + i * cols + c0;
            for (int64_t j = 0; j < width; ++j) total[j] += row[j];
        }
        for (int64_t j = 0; j < width; ++j) y[c0 + j] = (T)total[j];
    });
}

static void sum_columns(const Tensor& in, const Tensor& out) {
    if (in.dtype() == kFloat32) sum_columns_typed<float>(in, out);
    else sum_columns_typed<double>(in, out);
}

// softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m) with m = max(x): subtracting
// the max changes nothing mathematically and keeps exp from overflowing.
// log_softmax(x)_i = x_i - m - log(sum_j exp(x_j - m)).
template <typename T>
static void softmax_typed(const Tensor& in, const Tensor& out, bool log) {
    int64_t rows = in.shape()[0], n = in.shape()[1];
    const T* x = static_cast<const T*>(in.raw_data());
    T* y = static_cast<T*>(out.raw_data());
    parallel_for(rows, rows * n >= kParallelMin, [&](int64_t r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        T m = -INFINITY;
        for (int64_t i = 0; i < n; ++i) m = std::max(m, xr[i]);
        double total = 0;
        for (int64_t i = 0; i < n; ++i) {
            T e = exp_fast(xr[i] - m);
            if (!log) yr[i] = e;
            total += e;
        }
        if (log) {
            T shift = m + (T)std::log(total);
            for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - shift;
        } else {
            T inv = (T)(1.0 / total);
            for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
        }
    });
}

static void softmax_rows(const Tensor& in, const Tensor& out, bool log) {
    if (in.dtype() == kFloat32) softmax_typed<float>(in, out, log);
    else softmax_typed<double>(in, out, log);
}

// The table entries of this file (tensor/cpu/cpu_backend.cpp).
void add_reductions(Backend& table) {
    table.reduce_rows = reduce_rows;
    table.sum_columns = sum_columns;
    table.softmax_rows = softmax_rows;
}

}  // namespace cpu
}  // namespace nc
