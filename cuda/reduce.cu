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

#include "cuda/block_reduce.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

template <typename T>
__global__ void sum_rows_kernel(const T* x, T* out, int64_t rows, int64_t n) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double total = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) total += x[r * n + i];
        total = block_sum(total);
        if (threadIdx.x == 0) out[r] = (T)total;
    }
}

// With one block per row, a full reduction (one row: clip_grad_norm's sum
// of squares over GPT-2's 38.6M-element embedding gradient) would run on one
// SM. When there are few rows and they are long, each row is cut into
// chunks, one block per chunk (blockIdx.y the row), and a second kernel adds
// each row's chunk sums.
constexpr int64_t kFewRows = 64;             // fewer rows than about half the SMs of a large GPU
constexpr int64_t kLongRow = 1 << 16;        // worth splitting
constexpr int64_t kChunkElements = 1 << 14;  // 64 per thread of a 256-thread block
constexpr int64_t kMostChunks = 1024;

// NORMCORE_REDUCTION=rows in the environment keeps one block per row for
// every shape: the first version of the full reduction, which chapter 10's
// program checks and times beside the chunked one.
bool one_block_per_row_only() {
    const char* choice = std::getenv("NORMCORE_REDUCTION");
    return choice && std::string(choice) == "rows";
}

template <typename T>
__global__ void sum_row_chunks_kernel(const T* x, double* partial, int64_t n, int64_t per_chunk) {
    int64_t r = blockIdx.y, chunk = blockIdx.x;
    int64_t begin = chunk * per_chunk, end = begin + per_chunk < n ? begin + per_chunk : n;
    double total = 0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) total += x[r * n + i];
    total = block_sum(total);
    if (threadIdx.x == 0) partial[r * gridDim.x + chunk] = total;
}

template <typename T>
__global__ void sum_partials_kernel(const double* partial, T* out, int64_t rows, int64_t chunks) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double total = 0;
        for (int64_t i = threadIdx.x; i < chunks; i += blockDim.x) total += partial[r * chunks + i];
        total = block_sum(total);
        if (threadIdx.x == 0) out[r] = (T)total;
    }
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
        if (threadIdx.x == 0) {
            if (max_out) max_out[r] = values[0];
            if (arg_out) arg_out[r] = indices[0];
        }
        __syncthreads();  // values and indices are reused for the next row
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

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

template <typename T>
void sum_rows(const T* in, T* out, int64_t rows, int64_t n) {
    if (rows >= kFewRows || n < kLongRow || one_block_per_row_only()) {
        sum_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(in, out, rows, n);
        check_launch("sum_rows_kernel");
        return;
    }
    int64_t chunks = std::min(kMostChunks, (n + kChunkElements - 1) / kChunkElements);
    int64_t per_chunk = (n + chunks - 1) / chunks;
    // Freed right after the launches, as in column_sums: later uses queue behind them.
    double* partial = static_cast<double*>(allocate((size_t)(rows * chunks) * sizeof(double)));
    sum_row_chunks_kernel<<<dim3((unsigned)chunks, (unsigned)rows), kThreads, 0, stream()>>>(in, partial, n, per_chunk);
    check_launch("sum_row_chunks_kernel");
    sum_partials_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(partial, out, rows, chunks);
    check_launch("sum_partials_kernel");
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
