// index.cu — index_select / index_add and gather / scatter_add (embeddings,
// cross-entropy targets, their backward passes). Inputs arrive as
// contiguous [outer, D, inner] (tensor/backend.h). The accumulating kernels
// use atomicAdd, so duplicate indices add up correctly; the order of those
// additions (and so the last bits of a float sum) may differ from the CPU's.
// Every kernel checks its indices itself and records a bad one
// (cuda_common.cuh): the raw ops do not copy indices to the host to check.
//
// Shapes: in [outer, D, inner]; index_select: index [L], out [outer, L, inner];
// gather: index and out [outer, L, inner]; the adds the reverse, src [outer, L, inner].
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

// out[o, l, i] = in[o, index[l], i]
template <typename T>
__global__ void index_select_kernel(const T* in, const int64_t* index, T* out, int64_t outer, int64_t D, int64_t L,
                                    int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, l = (e / inner) % L, o = e / (inner * L);
        out[e] = index_in_range(index[l], D, kIndexSelectOp, record) ? in[(o * D + index[l]) * inner + i] : T(0);
    }
}

// out[o, index[l], i] += src[o, l, i]
// atomicAdd for each dtype the CPU supports here. CUDA has no int64_t
// overload; adding as unsigned 64-bit integers gives the same bits (two's
// complement), so that one serves.
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int64_t* p, int64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}

template <typename T>
__global__ void index_add_kernel(T* out, const int64_t* index, const T* src, int64_t outer, int64_t D, int64_t L,
                                 int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, l = (e / inner) % L, o = e / (inner * L);
        if (index_in_range(index[l], D, kIndexAddOp, record)) atomic_add(&out[(o * D + index[l]) * inner + i], src[e]);
    }
}

// out[o, l, i] = in[o, index[o, l, i], i]  (and, above and below, the adds)
template <typename T>
__global__ void gather_kernel(const T* in, const int64_t* index, T* out, int64_t outer, int64_t D, int64_t L,
                              int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, o = e / (inner * L);
        out[e] = index_in_range(index[e], D, kGatherOp, record) ? in[(o * D + index[e]) * inner + i] : T(0);
    }
}

// out[o, index[o, l, i], i] += src[o, l, i]
template <typename T>
__global__ void scatter_add_kernel(T* out, const int64_t* index, const T* src, int64_t outer, int64_t D, int64_t L,
                                   int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, o = e / (inner * L);
        if (index_in_range(index[e], D, kScatterAddOp, record)) atomic_add(&out[(o * D + index[e]) * inner + i], src[e]);
    }
}

const int64_t* indices(const Tensor& t) { return static_cast<const int64_t*>(t.raw_data()); }

// The [outer, D or L, inner] sizes: `table` has D in dim 1, `picked` has L.
struct Dims {
    int64_t outer, D, L, inner;
};
Dims dims_of(const Tensor& table, const Tensor& picked) {
    return {table.size(0), table.size(1), picked.size(1), table.size(2)};
}

}  // namespace

static void index_select(const Tensor& in, const Tensor& index, const Tensor& out) {
    Dims d = dims_of(in, out);
    int64_t n = out.numel();
    if (n == 0) return;
    if (in.dtype() == kFloat32)
        index_select_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const float*>(in.raw_data()), indices(index),
                                                                      static_cast<float*>(out.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else if (in.dtype() == kFloat64)
        index_select_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const double*>(in.raw_data()), indices(index),
                                                                      static_cast<double*>(out.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else
        index_select_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const int64_t*>(in.raw_data()), indices(index),
                                                                      static_cast<int64_t*>(out.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    check_launch("index_select_kernel");
}

static void index_add(const Tensor& out, const Tensor& index, const Tensor& src) {
    Dims d = dims_of(out, src);
    int64_t n = src.numel();
    if (n == 0) return;
    if (out.dtype() == kFloat32)
        index_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<float*>(out.raw_data()), indices(index),
                                                                   static_cast<const float*>(src.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else if (out.dtype() == kFloat64)
        index_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<double*>(out.raw_data()), indices(index),
                                                                   static_cast<const double*>(src.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else
        index_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<int64_t*>(out.raw_data()), indices(index),
                                                                   static_cast<const int64_t*>(src.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    check_launch("index_add_kernel");
}

static void gather(const Tensor& in, const Tensor& index, const Tensor& out) {
    Dims d = dims_of(in, out);
    int64_t n = out.numel();
    if (n == 0) return;
    if (in.dtype() == kFloat32)
        gather_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const float*>(in.raw_data()), indices(index),
                                                                static_cast<float*>(out.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else if (in.dtype() == kFloat64)
        gather_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const double*>(in.raw_data()), indices(index),
                                                                static_cast<double*>(out.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else
        gather_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const int64_t*>(in.raw_data()), indices(index),
                                                                static_cast<int64_t*>(out.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    check_launch("gather_kernel");
}

static void scatter_add(const Tensor& out, const Tensor& index, const Tensor& src) {
    Dims d = dims_of(out, src);
    int64_t n = src.numel();
    if (n == 0) return;
    if (out.dtype() == kFloat32)
        scatter_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<float*>(out.raw_data()), indices(index),
                                                                     static_cast<const float*>(src.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else if (out.dtype() == kFloat64)
        scatter_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<double*>(out.raw_data()), indices(index),
                                                                     static_cast<const double*>(src.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    else
        scatter_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<int64_t*>(out.raw_data()), indices(index),
                                                                     static_cast<const int64_t*>(src.raw_data()), d.outer, d.D, d.L, d.inner,
            index_error_record());
    check_launch("scatter_add_kernel");
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_indexing(Backend& table) {
    table.index_select = index_select;
    table.index_add = index_add;
    table.gather = gather;
    table.scatter_add = scatter_add;
}

}  // namespace cuda
}  // namespace nc
