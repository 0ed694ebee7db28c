// elementwise.cpp — CPU kernels for fill, unary/binary math, where, random.
//
// Each op is a small function object (a lambda) handed to a generic loop over
// strided operands (strided_loop.h); the loop is written once, the math once.
//
// Shapes: out and every operand of one shape [d0, ..., dk] (the raw op has
// expanded them: a broadcast dim has stride 0), any strides.
#include <cmath>
#include <type_traits>

#include "tensor/activations.h"
#include "tensor/backend.h"
#include "tensor/casts.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/random.h"

namespace nc {
namespace cpu {

// ---- the generic loops ---------------------------------------------------------

template <typename In, typename Out, typename F>
static void unary_loop(const Tensor& in, const Tensor& out, F f) {
    const In* x = static_cast<const In*>(in.raw_data());
    Out* y = static_cast<Out*>(out.raw_data());
    for_each_run<2>(out.shape(), {&in.strides(), &out.strides()}, [&](const int64_t* off, int64_t n, const int64_t* s) {
        const In* xs = x + off[0];
        Out* ys = y + off[1];
        if (s[0] == 1 && s[1] == 1) {
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) ys[i] = f(xs[i]);
        } else {
            for (int64_t i = 0; i < n; ++i) ys[i * s[1]] = f(xs[i * s[0]]);
        }
    });
}

template <typename T, typename F>
static void binary_loop(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    for_each_run<3>(out.shape(), {&a.strides(), &b.strides(), &out.strides()},
                    [&](const int64_t* off, int64_t n, const int64_t* s) {
                        const T* x = pa + off[0];
                        const T* y = pb + off[1];
                        T* z = po + off[2];
                        // `omp simd`: the output never partly overlaps an input, so
                        // the vector loop is safe; without it GCC gave up on the
                        // longer bodies (an activation's backward ran 15x slower).
                        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
#pragma omp simd
                            for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
                        } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {  // tensor (op) scalar/row
                            T yv = y[0];
#pragma omp simd
                            for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], yv);
                        } else {
                            for (int64_t i = 0; i < n; ++i) z[i * s[2]] = f(x[i * s[0]], y[i * s[1]]);
                        }
                    });
}

// ---- fill ----------------------------------------------------------------------

template <typename T>
static void fill_typed(const Tensor& out, T value) {
    T* y = static_cast<T*>(out.raw_data());
    for_each_run<1>(out.shape(), {&out.strides()}, [&](const int64_t* off, int64_t n, const int64_t* s) {
        T* ys = y + off[0];
        for (int64_t i = 0; i < n; ++i) ys[i * s[0]] = value;
    });
}

static void fill(const Tensor& out, double value) {
    switch (out.dtype()) {
        case DType::Float32: fill_typed<float>(out, (float)value); break;
        case DType::Float64: fill_typed<double>(out, value); break;
        case DType::Int64: fill_typed<int64_t>(out, (int64_t)value); break;
        case DType::BFloat16: fill_typed<BFloat16>(out, to_bfloat16((float)value)); break;
        case DType::Float16: fill_typed<Float16>(out, to_float16((float)value)); break;
    }
}

// ---- unary ---------------------------------------------------------------------

// Copy with a possible dtype conversion: one loop per (in, out) dtype pair.
template <typename In>
static void copy_from(const Tensor& in, const Tensor& out) {
    switch (out.dtype()) {
        case DType::Float32: unary_loop<In, float>(in, out, [](In v) { return convert<float>(v); }); break;
        case DType::Float64: unary_loop<In, double>(in, out, [](In v) { return convert<double>(v); }); break;
        case DType::Int64: unary_loop<In, int64_t>(in, out, [](In v) { return convert<int64_t>(v); }); break;
        case DType::BFloat16: unary_loop<In, BFloat16>(in, out, [](In v) { return convert<BFloat16>(v); }); break;
        case DType::Float16: unary_loop<In, Float16>(in, out, [](In v) { return convert<Float16>(v); }); break;
    }
}

// ---- activations and their derivatives ------------------------------------------
// The formulas are tensor/activations.h's, shared with the CUDA kernels; the
// transcendentals come from fast_math.h: vectorizable in float32, libm in float64.

template <typename T>
[[gnu::always_inline]] inline T sigmoid(T x) { return act::sigmoid_from_exp(exp_fast(-x)); }
template <typename T>
[[gnu::always_inline]] inline T silu_deriv(T x) { return act::silu_deriv(x, sigmoid(x)); }
template <typename T>
[[gnu::always_inline]] inline T gelu(T x) { return act::gelu(x, std::erf(act::gelu_erf_arg(x))); }
template <typename T>
[[gnu::always_inline]] inline T gelu_deriv(T x) {
    return act::gelu_deriv(x, std::erf(act::gelu_erf_arg(x)), std::exp(act::gelu_exp_arg(x)));
}
template <typename T>
[[gnu::always_inline]] inline T gelu_tanh(T x) { return act::gelu_tanh(x, act::sigmoid_from_exp(exp_fast(act::gelu_tanh_exp_arg(x)))); }
template <typename T>
[[gnu::always_inline]] inline T gelu_tanh_deriv(T x) {
    return act::gelu_tanh_deriv(x, act::sigmoid_from_exp(exp_fast(act::gelu_tanh_exp_arg(x))));
}

template <typename T>
static void unary_math(UnaryOp op, const Tensor& in, const Tensor& out) {
    switch (op) {
        case UnaryOp::Copy: break;  // handled by copy_from
        case UnaryOp::Neg: unary_loop<T, T>(in, out, [](T x) { return -x; }); break;
        case UnaryOp::Exp: unary_loop<T, T>(in, out, [](T x) { return exp_fast(x); }); break;
        case UnaryOp::Log: unary_loop<T, T>(in, out, [](T x) { return std::log(x); }); break;
        case UnaryOp::Sqrt: unary_loop<T, T>(in, out, [](T x) { return std::sqrt(x); }); break;
        case UnaryOp::Rsqrt: unary_loop<T, T>(in, out, [](T x) { return T(1) / std::sqrt(x); }); break;
        case UnaryOp::Tanh: unary_loop<T, T>(in, out, [](T x) { return tanh_fast(x); }); break;
        case UnaryOp::Sin: unary_loop<T, T>(in, out, [](T x) { return std::sin(x); }); break;
        case UnaryOp::Cos: unary_loop<T, T>(in, out, [](T x) { return std::cos(x); }); break;
        case UnaryOp::Abs: unary_loop<T, T>(in, out, [](T x) { return std::abs(x); }); break;
        case UnaryOp::Sign: unary_loop<T, T>(in, out, [](T x) { return T((x > 0) - (x < 0)); }); break;
        case UnaryOp::Relu: unary_loop<T, T>(in, out, [](T x) { return x > 0 ? x : T(0); }); break;
        case UnaryOp::Sigmoid: unary_loop<T, T>(in, out, [](T x) { return sigmoid(x); }); break;
        case UnaryOp::Silu: unary_loop<T, T>(in, out, [](T x) { return x * sigmoid(x); }); break;
        case UnaryOp::Gelu: unary_loop<T, T>(in, out, [](T x) { return gelu(x); }); break;
        case UnaryOp::GeluTanh: unary_loop<T, T>(in, out, [](T x) { return gelu_tanh(x); }); break;
    }
}

static void unary(UnaryOp op, const Tensor& in, const Tensor& out) {
    if (op == UnaryOp::Copy) {
        switch (in.dtype()) {
            case DType::Float32: copy_from<float>(in, out); break;
            case DType::Float64: copy_from<double>(in, out); break;
            case DType::Int64: copy_from<int64_t>(in, out); break;
            case DType::BFloat16: copy_from<BFloat16>(in, out); break;
            case DType::Float16: copy_from<Float16>(in, out); break;
        }
        return;
    }
    if (in.dtype() == kFloat32) unary_math<float>(op, in, out);
    else unary_math<double>(op, in, out);
}

// ---- binary --------------------------------------------------------------------

// The fused activation ops (float only; raw ops refuse integer tensors):
// x is the activation's input, g the incoming gradient.
template <typename T>
static void activation_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
    switch (op) {
        case BinaryOp::ReluBackward: binary_loop<T>(a, b, out, [](T x, T g) { return x > 0 ? g : T(0); }); break;
        case BinaryOp::SiluBackward: binary_loop<T>(a, b, out, [](T x, T g) { return g * silu_deriv(x); }); break;
        case BinaryOp::GeluBackward: binary_loop<T>(a, b, out, [](T x, T g) { return g * gelu_deriv(x); }); break;
        case BinaryOp::GeluTanhBackward:
            binary_loop<T>(a, b, out, [](T x, T g) { return g * gelu_tanh_deriv(x); });
            break;
        case BinaryOp::SwiGLU: binary_loop<T>(a, b, out, [](T x, T y) { return x * sigmoid(x) * y; }); break;
        default: break;
    }
}

template <typename T>
static void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
    switch (op) {
        case BinaryOp::Add: binary_loop<T>(a, b, out, [](T x, T y) { return x + y; }); break;
        case BinaryOp::Sub: binary_loop<T>(a, b, out, [](T x, T y) { return x - y; }); break;
        case BinaryOp::Mul: binary_loop<T>(a, b, out, [](T x, T y) { return x * y; }); break;
        case BinaryOp::Div: binary_loop<T>(a, b, out, [](T x, T y) { return x / y; }); break;
        case BinaryOp::Pow: binary_loop<T>(a, b, out, [](T x, T y) { return (T)std::pow(x, y); }); break;
        // NaN-propagating, like torch.maximum: (x > y || x != x) picks x when x is NaN.
        case BinaryOp::Maximum: binary_loop<T>(a, b, out, [](T x, T y) { return (x > y || x != x) ? x : y; }); break;
        case BinaryOp::Minimum: binary_loop<T>(a, b, out, [](T x, T y) { return (x < y || x != x) ? x : y; }); break;
        case BinaryOp::Eq: binary_loop<T>(a, b, out, [](T x, T y) { return T(x == y); }); break;
        case BinaryOp::Ne: binary_loop<T>(a, b, out, [](T x, T y) { return T(x != y); }); break;
        case BinaryOp::Lt: binary_loop<T>(a, b, out, [](T x, T y) { return T(x < y); }); break;
        case BinaryOp::Le: binary_loop<T>(a, b, out, [](T x, T y) { return T(x <= y); }); break;
        case BinaryOp::Gt: binary_loop<T>(a, b, out, [](T x, T y) { return T(x > y); }); break;
        case BinaryOp::Ge: binary_loop<T>(a, b, out, [](T x, T y) { return T(x >= y); }); break;
        default:
            if constexpr (std::is_floating_point_v<T>) activation_binary<T>(op, a, b, out);
            break;
    }
}

static void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
    switch (out.dtype()) {
        case DType::Float32: binary_typed<float>(op, a, b, out); break;
        case DType::Float64: binary_typed<double>(op, a, b, out); break;
        case DType::Int64: binary_typed<int64_t>(op, a, b, out); break;
        case DType::BFloat16:
        case DType::Float16: check_compute_dtype(out.dtype(), binary_op_name(op));  // raw::binary refused it already
    }
}

template <typename T>
static void where_typed(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
    const T* pc = static_cast<const T*>(cond.raw_data());
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    for_each_run<4>(out.shape(), {&cond.strides(), &a.strides(), &b.strides(), &out.strides()},
                    [&](const int64_t* off, int64_t n, const int64_t* s) {
                        for (int64_t i = 0; i < n; ++i)
                            po[off[3] + i * s[3]] = pc[off[0] + i * s[0]] != T(0) ? pa[off[1] + i * s[1]]
                                                                                  : pb[off[2] + i * s[2]];
                    });
}

static void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
    switch (out.dtype()) {
        case DType::Float32: where_typed<float>(cond, a, b, out); break;
        case DType::Float64: where_typed<double>(cond, a, b, out); break;
        case DType::Int64: where_typed<int64_t>(cond, a, b, out); break;
        case DType::BFloat16:
        case DType::Float16: check_compute_dtype(out.dtype(), "where");  // raw::where refused it already
    }
}

// ---- random --------------------------------------------------------------------
// Element e uses counter offset + e (tensor/philox.h has the draw itself).

template <typename T>
static void random_typed(RandomKind kind, uint64_t seed, uint64_t offset, double p, const Tensor& out) {
    T* y = static_cast<T*>(out.raw_data());
    int64_t n = out.numel();
    parallel_for(n, n >= kParallelMin,
                 [&](int64_t e) { y[e] = random_value<T>(kind, philox_words(offset + (uint64_t)e, seed), p); });
}

static void random(RandomKind kind, uint64_t seed, uint64_t offset, double p, const Tensor& out) {
    if (out.dtype() == kFloat32) random_typed<float>(kind, seed, offset, p, out);
    else random_typed<double>(kind, seed, offset, p, out);
}

// The table entries of this file (tensor/cpu/cpu_backend.cpp).
void add_elementwise(Backend& table) {
    table.fill = fill;
    table.unary = unary;
    table.binary = binary;
    table.where = where;
    table.random = random;
}

}  // namespace cpu
}  // namespace nc
