// geodesic_update.cpp — GeoNorm's update on the sphere, fused (declared in
// geodesic_update.h): the raw ops, the differentiable op, and the CPU
// kernels, forward beside backward. The CUDA kernels are in
// cuda/geodesic_update.cu; the derivation of the backward is tutorial 8's.
//
// Per row, with s = <x,x>, c = <u,x>/s, v = u - c x (the part of u tangent to
// the sphere through x), w = alpha v, q = <w,w>/s (the angle squared):
//   y = C(q) x + S(q) w,   C(q) = cos(sqrt q),  S(q) = sin(sqrt q)/sqrt q.
// y lies on the sphere of radius |x|. Rows with x = 0 fall back to y = x + u.
// The coefficients C, S and S' = dS/dq (with their series for tiny q) are
// in tensor/sphere.h, shared with CUDA.
//
// Shapes: x, u, y, dy, dx, du [rows, C]; alpha [1]; the kernel's
// dalpha_rows [rows].

#include <cmath>

#include "tensor/ops/rows.h"
#include "tensor/profile.h"
#include "autograd/node.h"
#include "tensor/raw_nn.h"
#include "tensor/sphere.h"

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
    backend_for(x.device()).geodesic_update.backward(as_rows(dy, "geodesic_update_backward"), rows,
                                                     as_rows(u, "geodesic_update_backward"), contiguous(alpha),
                                                     view(grads.dx, rows.shape()), view(grads.du, rows.shape()), dalpha_rows);
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

template <typename T>
static void geodesic_typed(const Tensor& x_t, const Tensor& u_t, const Tensor& alpha_t, const Tensor& out_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *x = ptr_or_null<T>(x_t), *u = ptr_or_null<T>(u_t);
    double alpha = *ptr_or_null<T>(alpha_t);
    T* y = mut_or_null<T>(out_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * C, *ur = u + r * C;
        T* yr = y + r * C;
        double s = 0, ux = 0;
        for (int64_t i = 0; i < C; ++i) {
            s += (double)xr[i] * xr[i];
            ux += (double)ur[i] * xr[i];
        }
        if (s == 0) {  // no sphere through x = 0: plain residual add
            for (int64_t i = 0; i < C; ++i) yr[i] = xr[i] + ur[i];
            continue;
        }
        double c = ux / s, ww = 0;  // v = u - c x is u's tangent part; w = alpha v
        for (int64_t i = 0; i < C; ++i) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
        }
        SphereCoefficients k = sphere_coefficients(ww / s);
        for (int64_t i = 0; i < C; ++i) yr[i] = (T)(k.C * xr[i] + k.S * alpha * (ur[i] - c * xr[i]));
    }
}

template <typename T>
static void geodesic_backward_typed(const Tensor& dy_t, const Tensor& x_t, const Tensor& u_t, const Tensor& alpha_t,
                                    const Tensor& dx_t, const Tensor& du_t, const Tensor& dalpha_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *dy = ptr_or_null<T>(dy_t), *x = ptr_or_null<T>(x_t), *u = ptr_or_null<T>(u_t);
    double alpha = *ptr_or_null<T>(alpha_t);
    T *dx = mut_or_null<T>(dx_t), *du = mut_or_null<T>(du_t), *dalpha = mut_or_null<T>(dalpha_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *dyr = dy + r * C, *xr = x + r * C, *ur = u + r * C;
        T *dxr = dx + r * C, *dur = du + r * C;
        double s = 0, ux = 0;
        for (int64_t i = 0; i < C; ++i) {
            s += (double)xr[i] * xr[i];
            ux += (double)ur[i] * xr[i];
        }
        if (s == 0) {  // the fallback y = x + u
            for (int64_t i = 0; i < C; ++i) dxr[i] = dur[i] = dyr[i];
            dalpha[r] = 0;
            continue;
        }
        double c = ux / s;
        // Pass 1: q and the two projections of the incoming gradient, a = <dy,x>, b = <dy,w>.
        double ww = 0, a = 0, b = 0;
        for (int64_t i = 0; i < C; ++i) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
            a += (double)dyr[i] * xr[i];
            b += (double)dyr[i] * w;
        }
        double q = ww / s;
        SphereCoefficients k = sphere_coefficients(q);
        double gam = -(k.S / 2) * a + k.dS * b;  // dL/dq
        // Pass 2: h = dL/dw = S dy + (2 gam / s) w; dL/dalpha = <h, v>; kvec = alpha h = dL/dv.
        double h_dot_v = 0, kx = 0;
        for (int64_t i = 0; i < C; ++i) {
            double v = ur[i] - c * xr[i];
            double h = k.S * dyr[i] + (2 * gam / s) * alpha * v;
            h_dot_v += h * v;
            kx += alpha * h * xr[i];
        }
        dalpha[r] = (T)h_dot_v;
        // Pass 3: du = P_x(kvec); dx = through C, S, q (w fixed) + through the projection v(x).
        for (int64_t i = 0; i < C; ++i) {
            double v = ur[i] - c * xr[i];
            double kv = alpha * (k.S * dyr[i] + (2 * gam / s) * alpha * v);
            dur[i] = (T)(kv - (kx / s) * xr[i]);
            dxr[i] = (T)(k.C * dyr[i] - (2 * gam * q / s) * xr[i] - (kx / s) * ur[i] + (2 * c * kx / s) * xr[i] - c * kv);
        }
    }
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
