// test_rope_kernels.cpp — the GPU's RoPE kernels (cuda/rope_kernels.cuh),
// run on the CPU by the CUDA emulator with the grid cuda/rope.cu launches,
// against the rotation written out here in long double and its central
// differences, with tables whose two halves differ (so that a backward
// that took the wrong channel's sine would show).
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda/device_common.cuh"
#include "cuda/rope_kernels.cuh"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;
using Real = long double;

template <typename T>
void check_rope(int64_t rows, int64_t D, int64_t positions, unsigned grid, Schedule schedule) {
    INFO("rope rows " << rows << ", D " << D << ", T " << positions << ", grid " << grid
                      << (sizeof(T) == 4 ? ", float" : ", double"));
    const int64_t h = D / 2;
    std::vector<T> x = nc_test::normal<T>(rows * D, 71), c = nc_test::normal<T>(positions * D, 72),
                   s = nc_test::normal<T>(positions * D, 73), dy = nc_test::normal<T>(rows * D, 74);
    std::vector<T> y(rows * D, (T)NAN), dx(rows * D, (T)NAN);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, rope_kernel<T>, (const T*)x.data(),
                          (const T*)c.data(), (const T*)s.data(), y.data(), rows, D, positions);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, rope_backward_kernel<T>, (const T*)dy.data(),
                          (const T*)c.data(), (const T*)s.data(), dx.data(), rows, D, positions);
    // Channel e of row r (position t = r % T) of y, as a function of row r of x.
    auto y_of = [&](const std::vector<Real>& xr, int64_t t, int64_t e) {
        const int64_t i = e % h;
        return e < h ? xr[i] * (Real)c[t * D + e] - xr[i + h] * (Real)s[t * D + e]
                     : xr[i + h] * (Real)c[t * D + e] + xr[i] * (Real)s[t * D + e];
    };
    std::vector<Real> y_want(rows * D), dx_want(rows * D);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = r % positions;
        std::vector<Real> xr(x.begin() + r * D, x.begin() + (r + 1) * D);
        for (int64_t e = 0; e < D; ++e) y_want[r * D + e] = y_of(xr, t, e);
        // dx_j = sum_e dy_e d y_e / d x_j, by central differences.
        for (int64_t j = 0; j < D; ++j) {
            Real total = 0;
            for (int64_t e = 0; e < D; ++e)
                total += (Real)dy[r * D + e] * nc_test::derivative([&](Real z) {
                             std::vector<Real> moved = xr;
                             moved[j] = z;
                             return y_of(moved, t, e);
                         }, xr[j]);
            dx_want[r * D + j] = total;
        }
    }
    const bool f32 = sizeof(T) == 4;
    nc_test::check_within("y", y, y_want, nc_test::scale_tolerance(y_want, f32, 4, 1e-14));
    nc_test::check_within("dx", dx, dx_want, nc_test::scale_tolerance(dx_want, f32, 4, 1e-9));
}

}  // namespace

TEST_CASE("emulated GPU: rope kernels equal the rotation and its differences", "[cuda-emulated][rope]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_rope<float>(12, 16, 4, blocks_for(12 * 8), s);
        check_rope<float>(5, 6, 5, 1, s);
        check_rope<float>(70, 16, 7, 1, s);  // one block of 256 threads for 560 pairs: each strides on
        check_rope<double>(9, 10, 3, 2, s);
    }
}
