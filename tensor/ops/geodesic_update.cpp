// geodesic_update.cpp — GeoNorm's update on the sphere, fused (declared in
// geodesic_update.h): the raw ops, the differentiable op, and the CPU
// kernels, forward beside backward. The CUDA kernels are in
// cuda/geodesic_update.cu; the derivation of the backward is tutorial 8's.
//
// The formulas, per row and per element, are geodesic_update.h's (shared
// with the CUDA kernels); here are the loops that sum over a row and call them.
//
// Shapes: x, u, y, dy, dx, du [rows, d]; alpha [1]; the kernel's
// dalpha_rows [rows].

#include <cmath>

#include "autograd/node.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/ops/geodesic_update.h"
#include "tensor/ops/rows.h"
#include "tensor/profile.h"
#include "tensor/raw_ops.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

static void check_geodesic(const Tensor& x, const Tensor& u, const Tensor& alpha) {
    check_same(x, u, "point x and update u", "geodesic_update");
    if (alpha.numel() != 1 || alpha.dtype() != x.dtype() || alpha.device() != x.device())
        fail("geodesic_update", "the step size alpha must be one " + std::string(dtype_name(x.dtype())) +
                                    " number on " + x.device().str() + ", got shape " + shape_str(alpha.shape()) + " " +
                                    dtype_name(alpha.dtype()));
}

Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha) {
    check_geodesic(x, u, alpha);
    Tensor rows = as_rows(x, "geodesic_update");
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).geodesic_update.forward(rows, as_rows(u, "geodesic_update"), contiguous(alpha),
                                            view(out, rows.shape()));
    return out;
}

GeodesicBackward geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha) {
    check_geodesic(x, u, alpha);
    check_same(dy, x, "gradient and point x", "geodesic_update_backward");
    Tensor rows = as_rows(x, "geodesic_update_backward");
    GeodesicBackward grads{empty(x.shape(), x.dtype(), x.device()), empty(x.shape(), x.dtype(), x.device()), Tensor()};
    Tensor dalpha_rows = empty({rows.size(0)}, x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device())
        .geodesic_update.backward(as_rows(dy, "geodesic_update_backward"), rows, as_rows(u, "geodesic_update_backward"),
                                  contiguous(alpha), view(grads.dx, rows.shape()), view(grads.du, rows.shape()),
                                  dalpha_rows);
    grads.dalpha = sum(dalpha_rows);
    return grads;
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

using Grads = std::vector<Tensor>;

Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha) {
    // Derivation: tutorials/08-geonorm.md. One backward kernel gives all three.
    return record("GeodesicUpdate", raw::geodesic_update(x, u, alpha), {x, u, alpha}, [x, u, alpha](const Tensor& g) {
        raw::GeodesicBackward d = raw::geodesic_update_backward(raw::contiguous(g), x, u, alpha);
        return Grads{d.dx, d.du, raw::reshape(d.dalpha, alpha.shape())};
    });
}

// ---- the CPU kernels, forward beside backward ------------------------------------

namespace cpu {

// Every sum along a row (s = <x, x>, <u, x>, <w, w>, and backward's) runs
// in kSumLanes running sums (fast_math.h): one running sum made each addition
// wait for the one before, and kept the whole loop from becoming vector
// code (bench/results/row-sums-in-lanes-2026-12-06.txt).
template <typename T>
static void geodesic_typed(const Tensor& x_tensor, const Tensor& u_tensor, const Tensor& alpha_tensor,
                           const Tensor& out_tensor) {
    int64_t rows = x_tensor.size(0), d = x_tensor.size(1);
    const T *x = ptr_or_null<T>(x_tensor), *u = ptr_or_null<T>(u_tensor);
    double alpha = *ptr_or_null<T>(alpha_tensor);
    T* y = mut_or_null<T>(out_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * d >= kParallelMin, [&](int64_t r) {
        const T *xr = x + r * d, *ur = u + r * d;
        T* yr = y + r * d;
        double s = 0, ux = 0;
#pragma omp simd simdlen(kSumLanes) reduction(+ : s, ux)
        for (int64_t i = 0; i < d; ++i) {
            s += (double)xr[i] * xr[i];
            ux += (double)ur[i] * xr[i];
        }
        if (s == 0) {  // no sphere through x = 0: plain residual add
            for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] + ur[i];
            return;
        }
        double c = ux / s, ww = 0;
#pragma omp simd simdlen(kSumLanes) reduction(+ : ww)
        for (int64_t i = 0; i < d; ++i) {
            double w = alpha * geodesic_tangent(ur[i], xr[i], c);
            ww += w * w;
        }
        SphereCoefficients coef = sphere_coefficients(ww / s);
        for (int64_t i = 0; i < d; ++i) yr[i] = (T)geodesic_output(coef, alpha, xr[i], geodesic_tangent(ur[i], xr[i], c));
    });
}

template <typename T>
static void geodesic_backward_typed(const Tensor& dy_tensor, const Tensor& x_tensor, const Tensor& u_tensor,
                                    const Tensor& alpha_tensor, const Tensor& dx_tensor, const Tensor& du_tensor,
                                    const Tensor& dalpha_tensor) {
    int64_t rows = x_tensor.size(0), d = x_tensor.size(1);
    const T *dy = ptr_or_null<T>(dy_tensor), *x = ptr_or_null<T>(x_tensor), *u = ptr_or_null<T>(u_tensor);
    double alpha = *ptr_or_null<T>(alpha_tensor);
    T *dx = mut_or_null<T>(dx_tensor), *du = mut_or_null<T>(du_tensor), *dalpha = mut_or_null<T>(dalpha_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * d >= kParallelMin, [&](int64_t r) {
        const T *dyr = dy + r * d, *xr = x + r * d, *ur = u + r * d;
        T *dxr = dx + r * d, *dur = du + r * d;
        double s = 0, ux = 0;
#pragma omp simd simdlen(kSumLanes) reduction(+ : s, ux)
        for (int64_t i = 0; i < d; ++i) {
            s += (double)xr[i] * xr[i];
            ux += (double)ur[i] * xr[i];
        }
        if (s == 0) {  // the fallback y = x + u
            for (int64_t i = 0; i < d; ++i) dxr[i] = dur[i] = dyr[i];
            dalpha[r] = 0;
            return;
        }
        double c = ux / s;
        // Pass 1: ww = <w,w>, gx = <dy,x>, gw = <dy,w>.
        double ww = 0, gx = 0, gw = 0;
#pragma omp simd simdlen(kSumLanes) reduction(+ : ww, gx, gw)
        for (int64_t i = 0; i < d; ++i) {
            double w = alpha * geodesic_tangent(ur[i], xr[i], c);
            ww += w * w;
            gx += (double)dyr[i] * xr[i];
            gw += (double)dyr[i] * w;
        }
        GeodesicRowGrad rg = geodesic_row_grad(alpha, s, c, ww, gx, gw);
        // Pass 2: dL/dalpha = <dw, v> and dvx = <dL/dv, x> = <alpha dw, x>.
        double dw_dot_v = 0, dvx = 0;
#pragma omp simd simdlen(kSumLanes) reduction(+ : dw_dot_v, dvx)
        for (int64_t i = 0; i < d; ++i) {
            double v = geodesic_tangent(ur[i], xr[i], c);
            double dw = geodesic_dw(rg, dyr[i], v);
            dw_dot_v += dw * v;
            dvx += alpha * dw * xr[i];
        }
        dalpha[r] = (T)dw_dot_v;
        // Pass 3: du and dx, element by element.
        for (int64_t i = 0; i < d; ++i) {
            double dxi, dui;
            geodesic_input_grads(rg, dvx, dyr[i], xr[i], ur[i], &dxi, &dui);
            dxr[i] = (T)dxi;
            dur[i] = (T)dui;
        }
    });
}

static void geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out) {
    if (x.dtype() == kFloat32) geodesic_typed<float>(x, u, alpha, out);
    else geodesic_typed<double>(x, u, alpha, out);
}

static void geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha,
                              const Tensor& dx, const Tensor& du, const Tensor& dalpha_rows) {
    if (x.dtype() == kFloat32) geodesic_backward_typed<float>(dy, x, u, alpha, dx, du, dalpha_rows);
    else geodesic_backward_typed<double>(dy, x, u, alpha, dx, du, dalpha_rows);
}

void add_geodesic_update(Backend& table) {
    table.geodesic_update = {geodesic_update, geodesic_update_backward};
}

}  // namespace cpu
}  // namespace nc
