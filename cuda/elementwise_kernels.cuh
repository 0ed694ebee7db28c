// elementwise_kernels.cuh — fill, unary and binary math, where, casts and
// random numbers (cuda/elementwise.cu launches them). One kernel shape for
// all: a grid-stride loop over the output's elements, each thread turning
// its linear index into one offset per operand (StridedIndexer), so views
// of any layout work without a copy. In a header of their own so that the
// CPU emulator (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: out and every operand of one shape [d0, ..., dk] (expanded by the
// raw op: a broadcast dim has stride 0), any strides.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/strided_indexer.cuh"
#include "tensor/activations.h"  // the formulas, shared with the CPU
#include "tensor/backend.h"
#include "tensor/casts.h"
#include "tensor/philox.h"

namespace nc {
namespace cuda {

// ---- the scalar functions ------------------------------------------------------
// The formulas are tensor/activations.h's, the very functions the CPU loops
// call, here with CUDA's accurate exp/tanh/erf (not the __expf intrinsics).

template <typename T>
__device__ T sigmoid(T x) { return act::sigmoid_from_exp<T>(exp(-x)); }

template <typename T>
__device__ T silu_deriv(T x) { return act::silu_deriv<T>(x, sigmoid(x)); }

template <typename T>
__device__ T gelu(T x) { return act::gelu<T>(x, erf(act::gelu_erf_arg(x))); }

template <typename T>
__device__ T gelu_deriv(T x) { return act::gelu_deriv<T>(x, erf(act::gelu_erf_arg(x)), exp(act::gelu_exp_arg(x))); }

template <typename T>
__device__ T gelu_tanh(T x) { return act::gelu_tanh<T>(x, act::sigmoid_from_exp<T>(exp(act::gelu_tanh_exp_arg(x)))); }

template <typename T>
__device__ T gelu_tanh_deriv(T x) {
    return act::gelu_tanh_deriv<T>(x, act::sigmoid_from_exp<T>(exp(act::gelu_tanh_exp_arg(x))));
}

template <typename T>
__device__ T apply_unary(UnaryOp op, T x) {
    switch (op) {
        case UnaryOp::Copy: return x;
        case UnaryOp::Neg: return -x;
        case UnaryOp::Exp: return exp(x);
        case UnaryOp::Log: return log(x);
        case UnaryOp::Sqrt: return sqrt(x);
        case UnaryOp::Rsqrt: return T(1) / sqrt(x);
        case UnaryOp::Tanh: return tanh(x);
        case UnaryOp::Sin: return sin(x);
        case UnaryOp::Cos: return cos(x);
        case UnaryOp::Abs: return fabs(x);
        case UnaryOp::Sign: return T((x > 0) - (x < 0));
        case UnaryOp::Relu: return x > 0 ? x : T(0);
        case UnaryOp::Sigmoid: return sigmoid(x);
        case UnaryOp::Silu: return x * sigmoid(x);
        case UnaryOp::Gelu: return gelu(x);
        case UnaryOp::GeluTanh: return gelu_tanh(x);
    }
    return x;
}

template <typename T>
__device__ T apply_binary(BinaryOp op, T x, T y) {
    switch (op) {
        case BinaryOp::Add: return x + y;
        case BinaryOp::Sub: return x - y;
        case BinaryOp::Mul: return x * y;
        case BinaryOp::Div: return x / y;
        case BinaryOp::Pow: return pow(x, y);
        case BinaryOp::Maximum: return (x > y || x != x) ? x : y;
        case BinaryOp::Minimum: return (x < y || x != x) ? x : y;
        case BinaryOp::Eq: return T(x == y);
        case BinaryOp::Ne: return T(x != y);
        case BinaryOp::Lt: return T(x < y);
        case BinaryOp::Le: return T(x <= y);
        case BinaryOp::Gt: return T(x > y);
        case BinaryOp::Ge: return T(x >= y);
        case BinaryOp::ReluBackward: return x > 0 ? y : T(0);
        case BinaryOp::SiluBackward: return y * silu_deriv(x);
        case BinaryOp::GeluBackward: return y * gelu_deriv(x);
        case BinaryOp::GeluTanhBackward: return y * gelu_tanh_deriv(x);
        case BinaryOp::SwiGLU: return x * sigmoid(x) * y;
    }
    return x;
}

// Integers only take the ops the raw layer allows for them.
__device__ inline int64_t apply_binary(BinaryOp op, int64_t x, int64_t y) {
    switch (op) {
        case BinaryOp::Add: return x + y;
        case BinaryOp::Sub: return x - y;
        case BinaryOp::Mul: return x * y;
        case BinaryOp::Maximum: return x > y ? x : y;
        case BinaryOp::Minimum: return x < y ? x : y;
        case BinaryOp::Eq: return x == y;
        case BinaryOp::Ne: return x != y;
        case BinaryOp::Lt: return x < y;
        case BinaryOp::Le: return x <= y;
        case BinaryOp::Gt: return x > y;
        case BinaryOp::Ge: return x >= y;
        default: return 0;
    }
}

// ---- kernels -------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* out, StridedIndexer<1> ix, int64_t n, T value) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[1];
        ix.offsets(e, off);
        out[off[0]] = value;
    }
}

// Copy with a cast (In -> Out); the math ops keep the type.
template <typename In, typename Out>
__global__ void cast_kernel(const In* in, Out* out, StridedIndexer<2> ix, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        ix.offsets(e, off);
        out[off[1]] = convert<Out>(in[off[0]]);  // tensor/casts.h, shared with the CPU
    }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* in, T* out, StridedIndexer<2> ix, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        ix.offsets(e, off);
        out[off[1]] = apply_unary(op, in[off[0]]);
    }
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, StridedIndexer<3> ix, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        ix.offsets(e, off);
        out[off[2]] = apply_binary(op, a[off[0]], b[off[1]]);
    }
}

template <typename T>
__global__ void where_kernel(const T* cond, const T* a, const T* b, T* out, StridedIndexer<4> ix, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[4];
        ix.offsets(e, off);
        out[off[3]] = cond[off[0]] != T(0) ? a[off[1]] : b[off[2]];
    }
}

template <typename T>
__global__ void random_kernel(RandomKind kind, uint64_t seed, uint64_t offset, double p, T* out, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        out[e] = random_value<T>(kind, philox_words(offset + (uint64_t)e, seed), p);
}

}  // namespace cuda
}  // namespace nc
