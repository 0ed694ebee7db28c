// elementwise.cu — fill, unary and binary math, where, casts and random
// numbers on the GPU: the launches of elementwise_kernels.cuh's kernels
// (which explains them).
//
// Shapes: out and every operand of one shape [d0, ..., dk] (expanded by the
// raw op: a broadcast dim has stride 0), any strides.
#include <cmath>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/elementwise_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

template <typename In>
void cast_from(const Tensor& in, const Tensor& out) {
    int64_t n = out.numel();
    StridedIndexer<2> ix = make_indexer<2>(out.shape(), {&in, &out});
    switch (out.dtype()) {
        case DType::Float32: cast_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<In>(in), ptr<float>(out), ix, n); break;
        case DType::Float64: cast_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<In>(in), ptr<double>(out), ix, n); break;
        case DType::Int64: cast_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<In>(in), ptr<int64_t>(out), ix, n); break;
        case DType::BFloat16: cast_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<In>(in), ptr<BFloat16>(out), ix, n); break;
        case DType::Float16: cast_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<In>(in), ptr<Float16>(out), ix, n); break;
    }
    check_launch("cast_kernel");
}

}  // namespace

void fill(const Tensor& out, double value) {
    int64_t n = out.numel();
    if (n == 0) return;
    StridedIndexer<1> ix = make_indexer<1>(out.shape(), {&out});
    switch (out.dtype()) {
        case DType::Float32: fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<float>(out), ix, n, (float)value); break;
        case DType::Float64: fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<double>(out), ix, n, value); break;
        case DType::Int64: fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<int64_t>(out), ix, n, (int64_t)value); break;
        case DType::BFloat16: fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<BFloat16>(out), ix, n, to_bfloat16((float)value)); break;
        case DType::Float16: fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<Float16>(out), ix, n, to_float16((float)value)); break;
    }
    check_launch("fill_kernel");
}

static void unary(UnaryOp op, const Tensor& in, const Tensor& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    if (op == UnaryOp::Copy) {
        switch (in.dtype()) {
            case DType::Float32: cast_from<float>(in, out); break;
            case DType::Float64: cast_from<double>(in, out); break;
            case DType::Int64: cast_from<int64_t>(in, out); break;
            case DType::BFloat16: cast_from<BFloat16>(in, out); break;
            case DType::Float16: cast_from<Float16>(in, out); break;
        }
        return;
    }
    StridedIndexer<2> ix = make_indexer<2>(out.shape(), {&in, &out});
    if (out.dtype() == kFloat32)
        unary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, ptr<float>(in), ptr<float>(out), ix, n);
    else
        unary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, ptr<double>(in), ptr<double>(out), ix, n);
    check_launch("unary_kernel");
}

static void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    StridedIndexer<3> ix = make_indexer<3>(out.shape(), {&a, &b, &out});
    switch (out.dtype()) {
        case DType::Float32:
            binary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, ptr<float>(a), ptr<float>(b), ptr<float>(out), ix, n);
            break;
        case DType::Float64:
            binary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, ptr<double>(a), ptr<double>(b), ptr<double>(out), ix, n);
            break;
        case DType::Int64:
            binary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, ptr<int64_t>(a), ptr<int64_t>(b), ptr<int64_t>(out), ix, n);
            break;
        case DType::BFloat16:
        case DType::Float16: check_compute_dtype(out.dtype(), binary_op_name(op));  // raw::binary refused it already
    }
    check_launch("binary_kernel");
}

static void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    StridedIndexer<4> ix = make_indexer<4>(out.shape(), {&cond, &a, &b, &out});
    switch (out.dtype()) {
        case DType::Float32:
            where_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<float>(cond), ptr<float>(a), ptr<float>(b), ptr<float>(out), ix, n);
            break;
        case DType::Float64:
            where_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<double>(cond), ptr<double>(a), ptr<double>(b), ptr<double>(out), ix, n);
            break;
        case DType::Int64:
            where_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(ptr<int64_t>(cond), ptr<int64_t>(a), ptr<int64_t>(b), ptr<int64_t>(out), ix, n);
            break;
        case DType::BFloat16:
        case DType::Float16: check_compute_dtype(out.dtype(), "where");  // raw::where refused it already
    }
    check_launch("where_kernel");
}

static void random(RandomKind kind, uint64_t seed, uint64_t offset, double p, const Tensor& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    if (out.dtype() == kFloat32)
        random_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(kind, seed, offset, p, ptr<float>(out), n);
    else
        random_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(kind, seed, offset, p, ptr<double>(out), n);
    check_launch("random_kernel");
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_elementwise(Backend& table) {
    table.fill = fill;
    table.unary = unary;
    table.binary = binary;
    table.where = where;
    table.random = random;
}

}  // namespace cuda
}  // namespace nc
