// reduce.cu — row reductions (sum, max, argmax), column sums and softmax.
// One block per row (rows beyond the grid are taken by the same blocks in
// turn); the threads of a block stride along the row and combine with
// block_sum / block_max. Sums accumulate in double, as on the CPU.
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

inline int row_blocks(int64_t rows) { return (int)std::max<int64_t>(1, std::min<int64_t>(rows, 65535)); }

template <typename T>
__global__ void sum_rows_kernel(const T* x, T* out, int64_t rows, int64_t n) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double total = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) total += x[r * n + i];
        total = block_sum(total);
        if (threadIdx.x == 0) out[r] = (T)total;
    }
}

// Max / Argmax: NaN wins, otherwise the first largest (as on the CPU). One
// thread per row keeps the "first" rule simple; rows are short here
// (vocabularies, feature dims) and this is not on a training hot path.
template <typename T>
__global__ void max_rows_kernel(const T* x, T* max_out, int64_t* arg_out, int64_t rows, int64_t n) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
        const T* row = x + r * n;
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i) {
            if (row[best] != row[best]) break;
            if (row[i] > row[best] || row[i] != row[i]) best = i;
        }
        if (max_out) max_out[r] = row[best];
        if (arg_out) arg_out[r] = best;
    }
}

// out[j] = sum_i x[i, j]: one thread per column walks down the rows
// (consecutive threads read consecutive addresses: coalesced).
template <typename T>
__global__ void sum_columns_kernel(const T* x, T* out, int64_t n, int64_t cols) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < cols; j += (int64_t)gridDim.x * blockDim.x) {
        double total = 0;
        for (int64_t i = 0; i < n; ++i) total += x[i * cols + j];
        out[j] = (T)total;
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
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) total += exp((double)xr[i] - m);
        total = block_sum(total);
        double shift = m + log(total);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            yr[i] = log_softmax ? (T)((double)xr[i] - shift) : (T)exp((double)xr[i] - shift);
    }
}

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

}  // namespace

void reduce_rows(ReduceOp op, const Tensor& in, const Tensor& out) {
    int64_t rows = in.size(0), n = in.size(1);
    if (rows == 0) return;
    bool f32 = in.dtype() == kFloat32;
    if (op == ReduceOp::Sum) {
        if (f32) sum_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<float>(in), ptr<float>(out), rows, n);
        else sum_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<double>(in), ptr<double>(out), rows, n);
        check_launch("sum_rows_kernel");
        return;
    }
    int64_t* arg = op == ReduceOp::Argmax ? ptr<int64_t>(out) : nullptr;
    if (f32)
        max_rows_kernel<<<blocks_for(rows), kThreads, 0, stream()>>>(ptr<float>(in), arg ? nullptr : ptr<float>(out), arg, rows, n);
    else
        max_rows_kernel<<<blocks_for(rows), kThreads, 0, stream()>>>(ptr<double>(in), arg ? nullptr : ptr<double>(out), arg, rows, n);
    check_launch("max_rows_kernel");
}

void sum_columns(const Tensor& in, const Tensor& out) {
    int64_t n = in.size(0), cols = in.size(1);
    if (cols == 0) return;
    if (in.dtype() == kFloat32)
        sum_columns_kernel<<<blocks_for(cols), kThreads, 0, stream()>>>(ptr<float>(in), ptr<float>(out), n, cols);
    else
        sum_columns_kernel<<<blocks_for(cols), kThreads, 0, stream()>>>(ptr<double>(in), ptr<double>(out), n, cols);
    check_launch("sum_columns_kernel");
}

void softmax_rows(const Tensor& in, const Tensor& out, bool log) {
    int64_t rows = in.size(0), n = in.size(1);
    if (rows == 0 || n == 0) return;
    if (in.dtype() == kFloat32)
        softmax_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<float>(in), ptr<float>(out), rows, n, log);
    else
        softmax_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr<double>(in), ptr<double>(out), rows, n, log);
    check_launch("softmax_rows_kernel");
}

}  // namespace cuda
}  // namespace nc
