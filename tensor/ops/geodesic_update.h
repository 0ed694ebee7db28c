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

// x, u, out, dy, dx, du: contiguous [rows, C]; alpha: one element (the step
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
NC_HOST_DEVICE inline double geodesic_output(const SphereCoefficients& k, double alpha, double x, double v) {
    return k.C * x + k.S * alpha * v;
}

// Backward (tutorial 8 derives it), in three passes over the row:
//   1. ww = <w,w>, a = <dy,x>, b = <dy,w>        -> geodesic_row_grad
//   2. h = dL/dw (geodesic_h); dL/dalpha = <h,v>; kx = <alpha h, x>
//   3. du and dx per element (geodesic_input_grads)
struct GeodesicRowGrad {
    SphereCoefficients k;
    double alpha, s, c, q;
    double gam;  // dL/dq = -(S/2) a + S' b
};
NC_HOST_DEVICE inline GeodesicRowGrad geodesic_row_grad(double alpha, double s, double c, double ww, double a,
                                                        double b) {
    GeodesicRowGrad g;
    g.alpha = alpha;
    g.s = s;
    g.c = c;
    g.q = ww / s;
    g.k = sphere_coefficients(g.q);
    g.gam = -(g.k.S / 2) * a + g.k.dS * b;
    return g;
}
// h_i = dL/dw_i = S dy_i + (2 gam / s) w_i.
NC_HOST_DEVICE inline double geodesic_h(const GeodesicRowGrad& g, double dy, double v) {
    return g.k.S * dy + (2 * g.gam / g.s) * g.alpha * v;
}
// du = P_x(alpha h); dx through C, S, q (w fixed) and through the projection v(x).
NC_HOST_DEVICE inline void geodesic_input_grads(const GeodesicRowGrad& g, double kx, double dy, double x, double u,
                                                double* dx, double* du) {
    double v = geodesic_tangent(u, x, g.c);
    double kv = g.alpha * geodesic_h(g, dy, v);  // dL/dv_i
    *du = kv - (kx / g.s) * x;
    *dx = g.k.C * dy - (2 * g.gam * g.q / g.s) * x - (kx / g.s) * u + (2 * g.c * kx / g.s) * x - g.c * kv;
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
