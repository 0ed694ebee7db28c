// activations.h — the activations' formulas and their derivatives, written
// once for the CPU loops (tensor/cpu/elementwise.cpp) and the CUDA kernels
// (cuda/elementwise_kernels.cuh). Each takes the transcendental it needs
// (exp, tanh, erf) already computed, so that each backend uses its own:
// the CPU its vectorizable exp_fast/tanh_fast in float32
// (tensor/cpu/fast_math.h), the GPU CUDA's accurate expf/tanhf/erff.
#pragma once

#include "tensor/host_device.h"

namespace nc {
namespace act {

// sigmoid(x) = 1 / (1 + exp(-x)), from e = exp(-x).
template <typename T>
NC_HOST_DEVICE inline T sigmoid_from_exp(T e) {
    return T(1) / (T(1) + e);
}

// silu(x) = x s(x)  =>  silu'(x) = s (1 + x (1 - s)), from s = sigmoid(x).
template <typename T>
NC_HOST_DEVICE inline T silu_deriv(T x, T s) {
    return s * (T(1) + x * (T(1) - s));
}

// Exact GELU: x Phi(x), Phi the standard normal CDF = (1 + erf(x / sqrt 2)) / 2,
// so GELU'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
// Both from e = erf(x / sqrt 2); the derivative also from g = exp(-x^2 / 2).
template <typename T>
NC_HOST_DEVICE inline T gelu_erf_arg(T x) {
    return x * T(0.7071067811865476);  // x / sqrt 2
}
template <typename T>
NC_HOST_DEVICE inline T gelu_exp_arg(T x) {
    return T(-0.5) * x * x;
}
template <typename T>
NC_HOST_DEVICE inline T gelu(T x, T e) {
    return T(0.5) * x * (T(1) + e);
}
template <typename T>
NC_HOST_DEVICE inline T gelu_deriv(T x, T e, T g) {
    return T(0.5) * (T(1) + e) + x * T(0.3989422804014327) * g;  // 1 / sqrt(2 pi)
}

// GPT-2's tanh approximation: 0.5 x (1 + tanh(u)), u = k (x + 0.044715 x^3),
// k = sqrt(2/pi). Since 0.5 (1 + tanh(u)) = sigmoid(2u), this is x s with
// s = 1 / (1 + exp(-2u)): one exponential and one division, where tanh
// itself needs an exponential, a division and a polynomial near 0 (in
// float32 on the CPU, with AVX-512, 1M values on 2 threads took 422 us
// through tanh and 219 us through s, with the same exp_fast;
// bench/results/gelu-sigmoid-rope-2026-12-06.txt). With 1 - tanh(u)^2 = 4 s (1 - s), the
// derivative 0.5 (1 + t) + 0.5 x (1 - t^2) u' becomes s + 2 x s (1 - s) u',
// u' = k (1 + 3 * 0.044715 x^2). Both from s = sigmoid_from_exp(e) with
// e = exp(gelu_tanh_exp_arg(x)) = exp(-2u). Far left, where tanh(u) rounds
// to -1 and 0.5 x (1 + t) to 0, x s keeps GELU's tiny negative values.
template <typename T>
NC_HOST_DEVICE inline T gelu_tanh_exp_arg(T x) {
    return T(-2 * 0.7978845608028654) * (x + T(0.044715) * x * x * x);
}
template <typename T>
NC_HOST_DEVICE inline T gelu_tanh(T x, T s) {
    return x * s;
}
template <typename T>
NC_HOST_DEVICE inline T gelu_tanh_deriv(T x, T s) {
    return s + T(2) * x * s * (T(1) - s) * T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * x * x);
}

}  // namespace act
}  // namespace nc
