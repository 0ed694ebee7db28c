// index.cpp — CPU kernels for index_select / index_add and gather / scatter_add.
//
// Tensors arrive as contiguous [outer, D, inner] views (see backend.h), so an
// index picks a whole `inner`-long row. The "add" kernels accumulate, because
// an index may repeat (the same token twice in a batch): that is exactly why
// an embedding's gradient is a sum.
//
// Shapes: in [outer, D, inner]; index_select: index [L], out [outer, L, inner];
// gather: index and out [outer, L, inner]; the adds the reverse, src [outer, L, inner].
#include <algorithm>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/parallel.h"

namespace nc {
namespace cpu {

template <typename T>
static void index_select_typed(const Tensor& in, const Tensor& index, const Tensor& out) {
    int64_t outer = in.shape()[0], D = in.shape()[1], inner = in.shape()[2], L = index.numel();
    const T* x = static_cast<const T*>(in.raw_data());
    const int64_t* idx = index.data<int64_t>();
    T* y = static_cast<T*>(out.raw_data());
    parallel_for(outer * L, outer * L * inner >= kParallelMin, [&](int64_t ol) {
        int64_t o = ol / L, l = ol % L;
        const T* src = x + (o * D + idx[l]) * inner;
        T* dst = y + ol * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] = src[i];
    });
}

template <typename T>
static void index_add_typed(const Tensor& out, const Tensor& index, const Tensor& src) {
    int64_t outer = out.shape()[0], D = out.shape()[1], inner = out.shape()[2], L = index.numel();
    const int64_t* idx = index.data<int64_t>();
    const T* s = static_cast<const T*>(src.raw_data());
    T* y = static_cast<T*>(out.raw_data());
    // Threads split the `inner` columns into blocks: two threads never write
    // the same element even when an index repeats, and the order of additions
    // per element is fixed, so results are reproducible.
    const int64_t block = 256;
    int64_t blocks = (inner + block - 1) / block;
    parallel_for(blocks, outer * L * inner >= kParallelMin, [&](int64_t b) {
        int64_t begin = b * block, end = std::min(inner, begin + block);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t l = 0; l < L; ++l) {
                T* dst = y + (o * D + idx[l]) * inner;
                const T* row = s + (o * L + l) * inner;
                for (int64_t i = begin; i < end; ++i) dst[i] += row[i];
            }
    });
}

template <typename T>
static void gather_typed(const Tensor& in, const Tensor& index, const Tensor& out) {
    int64_t outer = in.shape()[0], D = in.shape()[1], inner = in.shape()[2], L = index.shape()[1];
    const T* x = static_cast<const T*>(in.raw_data());
    const int64_t* idx = index.data<int64_t>();
    T* y = static_cast<T*>(out.raw_data());
    parallel_for(outer, outer * L * inner >= kParallelMin, [&](int64_t o) {
        for (int64_t l = 0; l < L; ++l)
            for (int64_t i = 0; i < inner; ++i) {
                int64_t e = (o * L + l) * inner + i;
                y[e] = x[(o * D + idx[e]) * inner + i];
            }
    });
}

template <typename T>
static void scatter_add_typed(const Tensor& out, const Tensor& index, const Tensor& src) {
    int64_t outer = out.shape()[0], D = out.shape()[1], inner = out.shape()[2], L = index.shape()[1];
    const int64_t* idx = index.data<int64_t>();
    const T* s = static_cast<const T*>(src.raw_data());
    T* y = static_cast<T*>(out.raw_data());
    // Each `o` owns a disjoint block of `out`, so splitting over o is race-free.
    parallel_for(outer, outer * L * inner >= kParallelMin, [&](int64_t o) {
        for (int64_t l = 0; l < L; ++l)
            for (int64_t i = 0; i < inner; ++i) {
                int64_t e = (o * L + l) * inner + i;
                y[(o * D + idx[e]) * inner + i] += s[e];
            }
    });
}

static void index_select(const Tensor& in, const Tensor& index, const Tensor& out) {
    if (in.dtype() == kFloat32) index_select_typed<float>(in, index, out);
    else if (in.dtype() == kFloat64) index_select_typed<double>(in, index, out);
    else index_select_typed<int64_t>(in, index, out);
}

static void index_add(const Tensor& out, const Tensor& index, const Tensor& src) {
    if (out.dtype() == kFloat32) index_add_typed<float>(out, index, src);
    else if (out.dtype() == kFloat64) index_add_typed<double>(out, index, src);
    else index_add_typed<int64_t>(out, index, src);
}

static void gather(const Tensor& in, const Tensor& index, const Tensor& out) {
    if (in.dtype() == kFloat32) gather_typed<float>(in, index, out);
    else if (in.dtype() == kFloat64) gather_typed<double>(in, index, out);
    else gather_typed<int64_t>(in, index, out);
}

static void scatter_add(const Tensor& out, const Tensor& index, const Tensor& src) {
    if (out.dtype() == kFloat32) scatter_add_typed<float>(out, index, src);
    else if (out.dtype() == kFloat64) scatter_add_typed<double>(out, index, src);
    else scatter_add_typed<int64_t>(out, index, src);
}

// The table entries of this file (tensor/cpu/cpu_backend.cpp).
void add_indexing(Backend& table) {
    table.index_select = index_select;
    table.index_add = index_add;
    table.gather = gather;
    table.scatter_add = scatter_add;
}

}  // namespace cpu
}  // namespace nc
