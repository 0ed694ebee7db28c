// reduce.cu — row reductions (sum, max, argmax), column sums and softmax.
// One block per row (rows beyond the grid are taken by the same blocks in
// turn); the threads of a block stride along the row and combine with
// block_sum / block_max. A few long rows (a full reduction is one row) are
// split across blocks instead. Column sums are column_sums.cuh's two
// passes. Sums accumulate in double, as on the CPU.
//
// Shapes: in [rows, n] -> out [rows] (sum, max, argmax) or [rows, n]
// (softmax); column sums: in [n, cols] -> out [cols].
#include <cmath>
#include <cstdlib>
#include <string>

#include "cuda/column_sums.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/reduce_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

// NORMCORE_REDUCTION=rows in the environment keeps one block per row for
// every shape: the first version of the full reduction, which chapter 10's
// program checks and times beside the chunked one.
bool one_block_per_row_only() {
    const char* choice = std::getenv("NORMCORE_REDUCTION");
    return choice && std::string(choice) == "rows";
}

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

template <typename T>
void sum_rows(const T* in, T* out, int64_t rows, int64_t n) {
    if (rows >= kFewRows || n < kLongRow || one_block_per_row_only()) {
        sum_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(in, out, rows, n);
        check_launch("sum_rows_kernel");
        return;
    }
    int64_t chunks = row_chunks(n);
    int64_t per_chunk = (n + chunks - 1) / chunks;
    // Freed right after the launches, as in column_sums: later uses queue behind them.
    double* partial = static_cast<double*>(allocate((size_t)(rows * chunks) * sizeof(double)));
    sum_row_chunks_kernel<<<dim3((unsigned)chunks, (unsigned)rows), kThreads, 0, stream()>>>(in, partial, n, per_chunk);
    check_launch("sum_row_chunks_kernel");
    sum_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>((const double*)partial, out, rows, chunks);
    check_launch("sum_rows_kernel (chunk sums)");
    deallocate(partial);
}

}  // namespace

static void reduce_rows(ReduceOp op, const Tensor& in, const Tensor& out) {
    int64_t rows = in.size(0), n = in.size(1);
    if (rows == 0) return;
    bool f32 = in.dtype() == kFloat32;
    if (op == ReduceOp::Sum) {
        if (f32) sum_rows(ptr<float>(in), ptr<float>(out), rows, n);
        else sum_rows(ptr<double>(in), ptr<double>(out), rows, n);
        return;
    }
    if (n == 0) throw Error("cuda max/argmax: a row of no elements has no maximum");
    int64_t* arg = op == ReduceOp::Argmax ? ptr<int64_t>(out) : nullptr;
    if (f32)
        max_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<float>(in), arg ? nullptr : ptr<float>(out), arg, rows, n);
    else
        max_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<double>(in), arg ? nullptr : ptr<double>(out), arg, rows, n);
    check_launch("max_rows_kernel");
}

static void sum_columns(const Tensor& in, const Tensor& out) {
    int64_t n = in.size(0), cols = in.size(1);
    if (in.dtype() == kFloat32) column_sums(MatrixEntry<float>{ptr<float>(in), cols}, ptr<float>(out), n, cols, "sum_columns");
    else column_sums(MatrixEntry<double>{ptr<double>(in), cols}, ptr<double>(out), n, cols, "sum_columns");
}

static void softmax_rows(const Tensor& in, const Tensor& out, bool log) {
    int64_t rows = in.size(0), n = in.size(1);
    if (rows == 0 || n == 0) return;
    if (in.dtype() == kFloat32)
        softmax_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<float>(in), ptr<float>(out), rows, n, log);
    else
        softmax_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<double>(in), ptr<double>(out), rows, n, log);
    check_launch("softmax_rows_kernel");
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_reductions(Backend& table) {
    table.reduce_rows = reduce_rows;
    table.sum_columns = sum_columns;
    table.softmax_rows = softmax_rows;
}

}  // namespace cuda
}  // namespace nc
