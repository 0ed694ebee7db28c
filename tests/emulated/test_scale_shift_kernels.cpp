// test_scale_shift_kernels.cpp — the GPU's scale_shift kernels
// (cuda/scale_shift_kernels.cuh), run on the CPU by the CUDA emulator with
// the grid cuda/scale_shift.cu launches, against y = x s + b written out
// here and its long double central differences.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda/device_common.cuh"
#include "cuda/scale_shift_kernels.cuh"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;
using Real = long double;

template <typename T>
void check_scale_shift(int64_t rows, int64_t C, unsigned grid, Schedule schedule) {
    INFO("scale_shift rows " << rows << ", C " << C << ", grid " << grid << (sizeof(T) == 4 ? ", float" : ", double"));
    std::vector<T> x = nc_test::normal<T>(rows * C, 61), s = nc_test::normal<T>(C, 62, 1.0), b = nc_test::normal<T>(C, 63);
    std::vector<T> dy = nc_test::normal<T>(rows * C, 64);
    std::vector<T> y(rows * C, (T)NAN), dx(rows * C, (T)NAN), dy_x(rows * C, (T)NAN);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, scale_shift_kernel<T>, (const T*)x.data(),
                          (const T*)s.data(), (const T*)b.data(), y.data(), rows, C);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, scale_shift_backward_kernel<T>, (const T*)dy.data(),
                          (const T*)x.data(), (const T*)s.data(), dx.data(), dy_x.data(), rows, C);
    // The gradients of sum dy * y: dx, and scale's per-element terms (dy_x,
    // summed over rows into dscale by the raw op).
    auto y_of = [](Real xv, Real sv, Real bv) { return xv * sv + bv; };
    std::vector<Real> y_want(rows * C), dx_want(rows * C), dyx_want(rows * C);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < C; ++i) {
            int64_t e = r * C + i;
            Real xe = x[e], se = s[i], be = b[i], g = dy[e];
            y_want[e] = y_of(xe, se, be);
            dx_want[e] = g * nc_test::derivative([&](Real z) { return y_of(z, se, be); }, xe);
            dyx_want[e] = g * nc_test::derivative([&](Real z) { return y_of(xe, z, be); }, se);
        }
    const bool f32 = sizeof(T) == 4;
    nc_test::check_within("y", y, y_want, nc_test::scale_tolerance(y_want, f32, 4, 1e-14));
    nc_test::check_within("dx", dx, dx_want, nc_test::scale_tolerance(dx_want, f32, 4, 1e-9));
    nc_test::check_within("dy * x", dy_x, dyx_want, nc_test::scale_tolerance(dyx_want, f32, 4, 1e-9));
}

}  // namespace

TEST_CASE("emulated GPU: scale_shift kernels equal the definition and its differences", "[cuda-emulated][scale_shift]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_scale_shift<float>(5, 300, blocks_for(5 * 300), s);
        check_scale_shift<float>(3, 7, 1, s);  // one block: every thread strides through several elements
        check_scale_shift<double>(4, 129, 2, s);
    }
}
