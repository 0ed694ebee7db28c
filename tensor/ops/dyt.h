// dyt.h — Dynamic Tanh (Zhu et al. 2025) as a fused op: the kernels every
// backend supplies (tensor/backend.h's Backend::dyt), the raw op and its
// backward, and the differentiable op. All defined in dyt.cpp (the CUDA
// kernels: cuda/dyt.cu).
//
// y = weight * tanh(alpha x) + bias over the last dim of x (weight, bias:
// [C], bias may be undefined; alpha: one element).
#pragma once

#include "tensor/host_device.h"
#include "tensor/tensor.h"

namespace nc {

// x, out, dy, dx and dy_tanh = dy tanh(alpha x): contiguous [rows, C]; alpha:
// one element; weight: [C]; bias: [C] or undefined; dalpha_rows: [rows],
// each row's sum of dz x (the raw op sums dy_tanh and dalpha_rows over rows).
struct DyTKernels {
    void (*forward)(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out);
    void (*backward)(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                     const Tensor& dy_tanh, const Tensor& dalpha_rows);
};

// The formulas, written once for the CPU loops and the CUDA kernels. t =
// tanh(alpha x) comes from the caller: the CPU's vectorizable tanh_fast in
// float32 (tensor/cpu/fast_math.h), the GPU's tanh.
//   y = weight t + bias
//   dz = dL/d(alpha x) = dy weight (1 - t^2);  dx = alpha dz,  dalpha = sum of dz x,
//   dweight = sum over rows of dy t,  dbias = sum over rows of dy.
template <typename T>
NC_HOST_DEVICE inline T dyt_value(T t, T weight, T bias) {
    return weight * t + bias;
}
template <typename T>
NC_HOST_DEVICE inline T dyt_dz(T dy, T weight, T t) {
    return dy * weight * (T(1) - t * t);  // through tanh: 1 - t^2
}

namespace raw {

Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias);
struct DyTBackward {
    Tensor dx, dalpha, dweight, dbias;  // dalpha has alpha's shape; dbias undefined without a bias
};
DyTBackward dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, bool has_bias);

}  // namespace raw

// Differentiable, one fused kernel each way.
Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias);

}  // namespace nc
