// geodesic_update_kernels.cuh — GeoNorm's update on the sphere, forward and
// backward kernels (cuda/geodesic_update.cu launches them). One block per
// row: the kernels sum over the row with block reductions and call the
// formulas of tensor/ops/geodesic_update.h for everything else, the very
// functions the CPU loops call (derived in tutorial 8).
// In a header of their own so that the CPU emulator (tests/cuda_emulator)
// runs these very kernels in CI.
//
// Shapes: x, u, y, dy, dx, du [rows, d]; alpha [1]; dalpha_rows [rows].
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "tensor/ops/geodesic_update.h"  // the formulas, shared with the CPU

namespace nc {
namespace cuda {

// s = <x, x> and ux = <u, x> of one row, summed by the whole block.
template <typename T>
__device__ void row_dots(const T* xr, const T* ur, int64_t d, double& s, double& ux) {
    s = 0;
    ux = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        s += (double)xr[i] * xr[i];
        ux += (double)ur[i] * xr[i];
    }
    s = block_sum(s);
    ux = block_sum(ux);
}

template <typename T>
__global__ void geodesic_kernel(const T* x, const T* u, const T* alpha_ptr, T* y, int64_t rows, int64_t d) {
    double alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * d, *ur = u + r * d;
        double s = 0, ux = 0;
        row_dots(xr, ur, d, s, ux);
        if (s == 0) {  // no sphere through x = 0: plain residual add
            for (int64_t i = threadIdx.x; i < d; i += blockDim.x) y[r * d + i] = xr[i] + ur[i];
            continue;
        }
        double c = ux / s, ww = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            double w = alpha * geodesic_tangent(ur[i], xr[i], c);
            ww += w * w;
        }
        SphereCoefficients coef = sphere_coefficients(block_sum(ww) / s);
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
            y[r * d + i] = (T)geodesic_output(coef, alpha, xr[i], geodesic_tangent(ur[i], xr[i], c));
    }
}

template <typename T>
__global__ void geodesic_backward_kernel(const T* dy, const T* x, const T* u, const T* alpha_ptr, T* dx, T* du,
                                         T* dalpha, int64_t rows, int64_t d) {
    double alpha = *alpha_ptr;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *dyr = dy + r * d, *xr = x + r * d, *ur = u + r * d;
        double s = 0, ux = 0;
        row_dots(xr, ur, d, s, ux);
        if (s == 0) {  // the fallback y = x + u
            for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dx[r * d + i] = du[r * d + i] = dyr[i];
            if (threadIdx.x == 0) dalpha[r] = 0;
            continue;
        }
        double c = ux / s;
        // Pass 1: ww = <w,w>, gx = <dy,x>, gw = <dy,w>.
        double ww = 0, gx = 0, gw = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            double w = alpha * geodesic_tangent(ur[i], xr[i], c);
            ww += w * w;
            gx += (double)dyr[i] * xr[i];
            gw += (double)dyr[i] * w;
        }
        ww = block_sum(ww);
        gx = block_sum(gx);
        gw = block_sum(gw);
        GeodesicRowGrad rg = geodesic_row_grad(alpha, s, c, ww, gx, gw);
        // Pass 2: dL/dalpha = <dw, v> and dvx = <dL/dv, x> = <alpha dw, x>.
        double dw_dot_v = 0, dvx = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            double v = geodesic_tangent(ur[i], xr[i], c);
            double dw = geodesic_dw(rg, dyr[i], v);
            dw_dot_v += dw * v;
            dvx += alpha * dw * xr[i];
        }
        dw_dot_v = block_sum(dw_dot_v);
        dvx = block_sum(dvx);
        if (threadIdx.x == 0) dalpha[r] = (T)dw_dot_v;
        // Pass 3: du and dx, element by element.
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            double dxi, dui;
            geodesic_input_grads(rg, dvx, dyr[i], xr[i], ur[i], &dxi, &dui);
            dx[r * d + i] = (T)dxi;
            du[r * d + i] = (T)dui;
        }
    }
}

}  // namespace cuda
}  // namespace nc
