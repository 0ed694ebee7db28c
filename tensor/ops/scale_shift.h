// scale_shift.h — y = x scale + shift per feature, the smallest fused op:
// the worked example of the README's "Adding a fused op" (every other op
// in tensor/ops/ has this shape, with more math). Declared here: its
// kernels' signatures, its per-element formula (shared by the CPU loop and
// the CUDA kernel), its raw ops and its differentiable op. Defined in
// scale_shift.cpp; the CUDA kernels in cuda/scale_shift.cu.
//
// x: [..., C]; scale, shift: [C]. With dy the incoming gradient:
//   dx = dy scale,  dscale = sum over rows of dy x,  dshift = sum over rows of dy.
#pragma once

#include "tensor/host_device.h"
#include "tensor/tensor.h"

namespace nc {

// The backend entry Backend::scale_shift. x, out, dy, dx, dy_x: contiguous
// [rows, C]; scale, shift: [C]. Backward writes dx and dy_x = dy x, which
// the raw op sums over rows into dscale (dshift is dy summed over rows).
struct ScaleShiftKernels {
    void (*forward)(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& out);
    void (*backward)(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& dx, const Tensor& dy_x);
};

// The formula, written once for both backends (NC_HOST_DEVICE: host and
// device code under nvcc, plain functions under g++ and clang).
NC_HOST_DEVICE inline double scale_shift_value(double x, double scale, double shift) { return x * scale + shift; }
NC_HOST_DEVICE inline double scale_shift_dx(double dy, double scale) { return dy * scale; }  // dy dy/dx

namespace raw {

Tensor scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift);
struct ScaleShiftBackward {
    Tensor dx, dscale, dshift;
};
ScaleShiftBackward scale_shift_backward(const Tensor& dy, const Tensor& x, const Tensor& scale);

}  // namespace raw

// Differentiable: one fused kernel each way.
Tensor scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift);

}  // namespace nc
