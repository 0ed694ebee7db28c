// geodesic_update.h — GeoNorm's update on the sphere as a fused op: the
// kernels every backend supplies (tensor/backend.h's Backend::geodesic_update),
// the raw ops, and the differentiable op. All defined in
// geodesic_update.cpp (the CUDA kernels: cuda/geodesic_update.cu); the
// backward's derivation is tutorial 8's.
//
// Each row x moves on its sphere along u's tangent part, by the exponential
// map with step alpha (a one-element tensor); y has x's norm.
#pragma once

#include "tensor/tensor.h"

namespace nc {

// x, u, out, dy, dx, du: contiguous [rows, C]; alpha: one element (the step
// size); dalpha_rows: [rows], each row's contribution to dL/dalpha.
struct GeodesicKernels {
    void (*forward)(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out);
    void (*backward)(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& dx,
                     const Tensor& du, const Tensor& dalpha_rows);
};

namespace raw {

Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha);
struct GeodesicBackward {
    Tensor dx, du;
    Tensor dalpha;  // shape [] (summed over rows)
};
GeodesicBackward geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha);

}  // namespace raw

// Differentiable: y = exp_x(alpha P_x(u)) on the sphere of radius |x|, row by
// row over the last dim. alpha gets a gradient when it requires grad.
Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha);

}  // namespace nc
