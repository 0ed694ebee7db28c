// test_geodesic_dyt_kernels.cpp — the GPU's geodesic update (GeoNorm) and
// Dynamic Tanh kernels (cuda/geodesic_update_kernels.cuh, cuda/dyt_kernels.cuh),
// run on the CPU by the CUDA emulator (tests/cuda_emulator) with the grids
// cuda/geodesic_update.cu and cuda/dyt.cu launch. The geodesic update is
// checked against the sphere's exponential map written the textbook way
// (cos, sin, a division by |w|), not the library's series; every gradient
// against long double central differences.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda/device_common.cuh"
#include "cuda/dyt_kernels.cuh"
#include "cuda/geodesic_update_kernels.cuh"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;
using Real = long double;
using Row = std::vector<Real>;

// y = cos(theta) x + |x| sin(theta) w / |w|, with w = alpha (u - (u.x / x.x) x)
// the step in x's tangent plane and theta = |w| / |x| the angle it turns
// through; y = x when w = 0, and y = x + u when x = 0 (no sphere).
Row geodesic_row(const Row& x, const Row& u, Real alpha) {
    const size_t C = x.size();
    Real xx = 0, ux = 0;
    for (size_t i = 0; i < C; ++i) xx += x[i] * x[i], ux += u[i] * x[i];
    Row y(C);
    if (xx == 0) {
        for (size_t i = 0; i < C; ++i) y[i] = x[i] + u[i];
        return y;
    }
    Row w(C);
    Real ww = 0;
    for (size_t i = 0; i < C; ++i) w[i] = alpha * (u[i] - ux / xx * x[i]), ww += w[i] * w[i];
    Real norm_x = std::sqrt(xx), norm_w = std::sqrt(ww), theta = norm_w / norm_x;
    for (size_t i = 0; i < C; ++i) y[i] = std::cos(theta) * x[i] + (norm_w > 0 ? norm_x * std::sin(theta) * w[i] / norm_w : 0);
    return y;
}

Real dot(const Row& a, const Row& b) {
    Real total = 0;
    for (size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
    return total;
}

Row slice(const std::vector<double>& v, int64_t r, int64_t C) { return Row(v.begin() + r * C, v.begin() + (r + 1) * C); }

template <typename T>
void check_geodesic(const std::vector<double>& x, const std::vector<double>& u, double alpha_value, int64_t rows,
                    int64_t C, unsigned grid, Schedule schedule) {
    INFO("rows " << rows << ", C " << C << ", alpha " << alpha_value << ", grid " << grid
                 << (sizeof(T) == 4 ? ", float" : ", double"));
    std::vector<T> xt(x.begin(), x.end()), ut(u.begin(), u.end());
    std::vector<double> dy_d = nc_test::normal<double>(rows * C, 41);
    std::vector<T> dy(dy_d.begin(), dy_d.end());
    T alpha = (T)alpha_value;
    std::vector<T> y(rows * C, (T)NAN), dx(rows * C, (T)NAN), du(rows * C, (T)NAN), dalpha(rows, (T)NAN);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, geodesic_kernel<T>, (const T*)xt.data(),
                          (const T*)ut.data(), (const T*)&alpha, y.data(), rows, C);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, geodesic_backward_kernel<T>, (const T*)dy.data(),
                          (const T*)xt.data(), (const T*)ut.data(), (const T*)&alpha, dx.data(), du.data(),
                          dalpha.data(), rows, C);
    // The references from the values the kernel saw (rounded to T).
    std::vector<double> xs(xt.begin(), xt.end()), us(ut.begin(), ut.end());
    std::vector<Real> y_want(rows * C), dx_want(rows * C), du_want(rows * C), dalpha_want(rows);
    for (int64_t r = 0; r < rows; ++r) {
        Row xr = slice(xs, r, C), ur = slice(us, r, C), dyr = slice(dy_d, r, C);
        Real a = (Real)alpha;
        // x = 0 has no sphere: the kernels use y = x + u and its gradient
        // there; differences across x = 0 would leave that branch.
        bool origin = dot(xr, xr) == 0;
        auto loss = [&](const Row& xv, const Row& uv, Real av) {
            if (origin) {
                Real total = 0;
                for (int64_t i = 0; i < C; ++i) total += dyr[i] * (xv[i] + uv[i]);
                return total;
            }
            return dot(dyr, geodesic_row(xv, uv, av));
        };
        Row yr = geodesic_row(xr, ur, a);
        for (int64_t i = 0; i < C; ++i) {
            y_want[r * C + i] = yr[i];
            dx_want[r * C + i] = nc_test::derivative([&](Real z) { Row v = xr; v[i] = z; return loss(v, ur, a); }, xr[i]);
            du_want[r * C + i] = nc_test::derivative([&](Real z) { Row v = ur; v[i] = z; return loss(xr, v, a); }, ur[i]);
        }
        dalpha_want[r] = origin ? 0 : nc_test::derivative([&](Real z) { return loss(xr, ur, z); }, a);
    }
    const bool f32 = sizeof(T) == 4;
    nc_test::check_within("y", y, y_want, nc_test::scale_tolerance(y_want, f32, 64, 1e-12));
    nc_test::check_within("dx", dx, dx_want, nc_test::scale_tolerance(dx_want, f32, 64, 1e-8));
    nc_test::check_within("du", du, du_want, nc_test::scale_tolerance(du_want, f32, 64, 1e-8));
    nc_test::check_within("dalpha", dalpha, dalpha_want, nc_test::scale_tolerance(dalpha_want, f32, 64, 1e-8));
}

template <typename T>
void check_dyt(int64_t rows, int64_t C, bool bias, unsigned grid, Schedule schedule) {
    INFO("DyT rows " << rows << ", C " << C << (bias ? ", bias" : "") << ", grid " << grid
                     << (sizeof(T) == 4 ? ", float" : ", double"));
    std::vector<T> x = nc_test::normal<T>(rows * C, 51), w = nc_test::normal<T>(C, 52, 1.0), b = nc_test::normal<T>(C, 53);
    std::vector<T> dy = nc_test::normal<T>(rows * C, 54);
    for (T& v : x) v *= 2;  // some elements far into tanh's flat tails
    T alpha = (T)0.8;
    std::vector<T> y(rows * C, (T)NAN), dx(rows * C, (T)NAN), dy_t(rows * C, (T)NAN), dalpha(rows, (T)NAN);
    cuda_emulator::launch(dim3(blocks_for(rows * C)), dim3(kThreads), schedule, dyt_kernel<T>, (const T*)x.data(),
                          (const T*)&alpha, (const T*)w.data(), bias ? (const T*)b.data() : (const T*)nullptr, y.data(),
                          rows, C);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, dyt_backward_kernel<T>, (const T*)dy.data(),
                          (const T*)x.data(), (const T*)&alpha, (const T*)w.data(), dx.data(), dy_t.data(),
                          dalpha.data(), rows, C);
    // y = w tanh(alpha x) + b; the gradients of sum dy * y: dx, the weight's
    // per-element terms (dy_t, summed over rows into dw), and alpha's per row.
    auto y_of = [&](Real xv, Real a, Real wv, int64_t i) { return wv * std::tanh(a * xv) + (bias ? (Real)b[i] : 0); };
    std::vector<Real> y_want(rows * C), dx_want(rows * C), dyt_want(rows * C), dalpha_want(rows, 0);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < C; ++i) {
            int64_t e = r * C + i;
            Real xe = x[e], we = w[i], g = dy[e], a = alpha;
            y_want[e] = y_of(xe, a, we, i);
            dx_want[e] = g * nc_test::derivative([&](Real z) { return y_of(z, a, we, i); }, xe);
            dyt_want[e] = g * nc_test::derivative([&](Real z) { return y_of(xe, a, z, i); }, we);
            dalpha_want[r] += g * nc_test::derivative([&](Real z) { return y_of(xe, z, we, i); }, a);
        }
    const bool f32 = sizeof(T) == 4;
    nc_test::check_within("y", y, y_want, nc_test::scale_tolerance(y_want, f32, 16, 1e-12));
    nc_test::check_within("dx", dx, dx_want, nc_test::scale_tolerance(dx_want, f32, 16, 1e-9));
    nc_test::check_within("dy * tanh", dy_t, dyt_want, nc_test::scale_tolerance(dyt_want, f32, 16, 1e-9));
    nc_test::check_within("dalpha", dalpha, dalpha_want, nc_test::scale_tolerance(dalpha_want, f32, 64, 1e-9));
}

}  // namespace

TEST_CASE("emulated GPU: the geodesic update's kernels equal the exponential map and its differences",
          "[cuda-emulated][geonorm]") {
    const int64_t rows = 5, C = 300;
    std::vector<double> x = nc_test::normal<double>(rows * C, 42), u = nc_test::normal<double>(rows * C, 43);
    // Row 1: u nearly along x, so the angle is tiny (the series branch of
    // sphere_coefficients, q < 0.1); row 2: u exactly 3 x (no tangent part);
    // row 3: x = 0 (no sphere: y = x + u).
    for (int64_t i = 0; i < C; ++i) {
        u[1 * C + i] = 2 * x[1 * C + i] + 1e-2 * u[1 * C + i];
        u[2 * C + i] = 3 * x[2 * C + i];
        x[3 * C + i] = 0;
    }
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_geodesic<float>(x, u, 0.7, rows, C, row_blocks(rows), s);
        check_geodesic<double>(x, u, 0.7, rows, C, 2, s);  // fewer blocks than rows
        check_geodesic<double>(x, u, 0.02, rows, C, row_blocks(rows), s);  // every row on the series branch
    }
}

TEST_CASE("emulated GPU: Dynamic Tanh kernels equal the definition and its differences", "[cuda-emulated][dyt]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_dyt<float>(4, 300, true, row_blocks(4), s);
        check_dyt<float>(3, 7, false, 2, s);
        check_dyt<double>(3, 300, true, 2, s);
    }
}
