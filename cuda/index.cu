// index.cu — index_select / index_add and gather / scatter_add on the GPU
// (embeddings, cross-entropy targets, their backward passes): the launches
// of index_kernels.cuh's kernels (which explains them).
//
// Shapes: in [outer, D, inner]; index_select: index [L], out [outer, L, inner];
// gather: index and out [outer, L, inner]; the adds the reverse, src [outer, L, inner].
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/index_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

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
