// geodesic_kernels.cuh — GeoNorm's update on the sphere, forward and
// backward kernels (cuda/geodesic_update.cu launches them; the math is
// tensor/ops/geodesic_update.cpp's, derived in tutorial 8; the coefficients
// C, S, S' are tensor/sphere.h's, shared with the CPU). One block per row.
// In a header of their own so that the CPU emulator (tests/cuda_emulator)
// runs these very kernels in CI.
//
// Shapes: x, u, y, dy, dx, du [rows, C]; alpha [1]; dalpha_rows [rows].
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "tensor/sphere.h"

namespace nc {
namespace cuda {

// s = <x, x> and ux = <u, x> of one row, summed by the whole block.
template <typename T>
__device__ void row_dots(const T* xr, const T* ur, int64_t C, double& s, double& ux) {
    s = 0;
    ux = 0;
    for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
        s += (double)xr[i] * xr[i];
        ux += (double)ur[i] * xr[i];
    }
    s = block_sum(s);
    ux = block_sum(ux);
}

template <typename T>
__global__ void geodesic_kernel(const T* x, const T* u, const T* alpha_ptr, T* y, int64_t rows, int64_t C) {
    double alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * C, *ur = u + r * C;
        double s = 0, ux = 0;
        row_dots(xr, ur, C, s, ux);
        if (s == 0) {  // no sphere through x = 0: plain residual add
            for (int64_t i = threadIdx.x; i < C; i += blockDim.x) y[r * C + i] = xr[i] + ur[i];
            continue;
        }
        double c = ux / s, ww = 0;  // v = u - c x is u's tangent part; w = alpha v
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
        }
        SphereCoefficients k = sphere_coefficients(block_sum(ww) / s);
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
            y[r * C + i] = (T)(k.C * xr[i] + k.S * alpha * (ur[i] - c * xr[i]));
    }
}

template <typename T>
__global__ void geodesic_backward_kernel(const T* dy, const T* x, const T* u, const T* alpha_ptr, T* dx, T* du,
                                         T* dalpha, int64_t rows, int64_t C) {
    double alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *dyr = dy + r * C, *xr = x + r * C, *ur = u + r * C;
        double s = 0, ux = 0;
        row_dots(xr, ur, C, s, ux);
        if (s == 0) {  // the fallback y = x + u
            for (int64_t i = threadIdx.x; i < C; i += blockDim.x) dx[r * C + i] = du[r * C + i] = dyr[i];
            if (threadIdx.x == 0) dalpha[r] = 0;
            continue;
        }
        double c = ux / s;
        // Pass 1: q and the projections a = <dy, x>, b = <dy, w>.
        double ww = 0, a = 0, b = 0;
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            double w = alpha * (ur[i] - c * xr[i]);
            ww += w * w;
            a += (double)dyr[i] * xr[i];
            b += (double)dyr[i] * w;
        }
        ww = block_sum(ww);
        a = block_sum(a);
        b = block_sum(b);
        double q = ww / s;
        SphereCoefficients k = sphere_coefficients(q);
        double gam = -(k.S / 2) * a + k.dS * b;  // dL/dq
        // Pass 2: h = dL/dw = S dy + (2 gam / s) w; dL/dalpha = <h, v>; kvec = alpha h.
        double h_dot_v = 0, kx = 0;
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            double v = ur[i] - c * xr[i];
            double h = k.S * dyr[i] + (2 * gam / s) * alpha * v;
            h_dot_v += h * v;
            kx += alpha * h * xr[i];
        }
        h_dot_v = block_sum(h_dot_v);
        kx = block_sum(kx);
        if (threadIdx.x == 0) dalpha[r] = (T)h_dot_v;
        // Pass 3: du = P_x(kvec); dx through C, S, q and through v(x).
        for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
            double v = ur[i] - c * xr[i];
            double kv = alpha * (k.S * dyr[i] + (2 * gam / s) * alpha * v);
            du[r * C + i] = (T)(kv - (kx / s) * xr[i]);
            dx[r * C + i] =
                (T)(k.C * dyr[i] - (2 * gam * q / s) * xr[i] - (kx / s) * ur[i] + (2 * c * kx / s) * xr[i] - c * kv);
        }
    }
}

}  // namespace cuda
}  // namespace nc
