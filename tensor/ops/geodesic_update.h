// geodesic_update.h — GeoNorm's update on the sphere as a fused op: the
// kernels every backend supplies (tensor/backend.h's Backend::geodesic_update),
// the raw ops, and the differentiable op. All defined in
// geodesic_update.cpp (the CUDA kernels: cuda/geodesic_update.cu); the
// backward's derivation is tutorial 8's.
//
// Each row x moves on its sphere along u's tangent part, by the exponential
// map with step alpha (a one-element tensor); y has x's norm.
#pragma once

#include "tensor/host_device.h"
#include "tensor/sphere.h"
#include "tensor/tensor.h"

namespace nc {

// x, u, out, dy, dx, du: contiguous [rows, d]; alpha: one element (the step
// size); dalpha_rows: [rows], each row's contribution to dL/dalpha.
struct GeodesicKernels {
    void (*forward)(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out);
    void (*backward)(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& dx,
                     const Tensor& du, const Tensor& dalpha_rows);
};

// ---- the formulas, written once for the CPU loops and the CUDA kernels ------------
//
// Per row, with s = <x,x>, c = <u,x>/s, v = u - c x (the part of u tangent to
// the sphere through x), w = alpha v, q = <w,w>/s (the angle squared):
//   y = C(q) x + S(q) w,   C(q) = cos(sqrt q),  S(q) = sin(sqrt q)/sqrt q
// (tensor/sphere.h). Rows with x = 0 fall back to y = x + u. Each backend
// only sums over the row (a loop on the CPU, a block reduction on the GPU)
// and calls these for everything else.

// v_i, element i of u's tangent part.
NC_HOST_DEVICE inline double geodesic_tangent(double u, double x, double c) { return u - c * x; }
// y_i = C x_i + S alpha v_i.
NC_HOST_DEVICE inline double geodesic_output(const SphereCoefficients& coef, double alpha, double x, double v) {
    return coef.C * x + coef.S * alpha * v;
}

// Backward (tutorial 8 derives it, in these names), in three passes over
// the row, g = dL/dy:
//   1. ww = <w,w>, gx = <g,x>, gw = <g,w>          -> geodesic_row_grad
//   2. dw = dL/dw (geodesic_dw); dL/dalpha = <dw,v>; dvx = <dL/dv, x> = <alpha dw, x>
//   3. du and dx per element (geodesic_input_grads)
struct GeodesicRowGrad {
    SphereCoefficients coef;
    double alpha, s, c, q;
    double dq;  // dL/dq = -(S/2) gx + S' gw
};
NC_HOST_DEVICE inline GeodesicRowGrad geodesic_row_grad(double alpha, double s, double c, double ww, double gx,
                                                        double gw) {
    GeodesicRowGrad r;
    r.alpha = alpha;
    r.s = s;
    r.c = c;
    r.q = ww / s;
    r.coef = sphere_coefficients(r.q);
    r.dq = -(r.coef.S / 2) * gx + r.coef.dS * gw;
    return r;
}
// dw_i = dL/dw_i = S g_i + (2 dq / s) w_i.
NC_HOST_DEVICE inline double geodesic_dw(const GeodesicRowGrad& r, double g, double v) {
    return r.coef.S * g + (2 * r.dq / r.s) * r.alpha * v;
}
// du = P_x(dL/dv); dx through C, S, q (w fixed) and through the projection v(x).
NC_HOST_DEVICE inline void geodesic_input_grads(const GeodesicRowGrad& r, double dvx, double g, double x, double u,
                                                double* dx, double* du) {
    double v = geodesic_tangent(u, x, r.c);
    double dv = r.alpha * geodesic_dw(r, g, v);  // dL/dv_i
    *du = dv - (dvx / r.s) * x;
    *dx = r.coef.C * g - (2 * r.dq * r.q / r.s) * x - (dvx / r.s) * u + (2 * r.c * dvx / r.s) * x - r.c * dv;
}

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
