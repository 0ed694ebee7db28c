// test_rope_kernels.cpp — the GPU's RoPE kernels (cuda/rope_kernels.cuh),
// run on the CPU by the CUDA emulator with the grid cuda/rope.cu launches,
// against the rotation written out here in long double and its central
// differences, on contiguous rows and on heads-last views, with tables
// whose two halves differ (so that a backward that took the wrong
// channel's sine would show).
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
using nc::MatrixLayout;
using Real = long double;

// B x H matrices of T positions, D channels, each of the inputs (x, dy) and
// each of the outputs (y, dx) as contiguous rows or heads-last ([B, T, H, D]
// memory seen as [B, H, T, D]): Llama's queries and keys reach RoPE heads
// last and leave contiguous, and their gradients go the other way.
template <typename T>
void check_rope(int64_t B, int64_t H, int64_t positions, int64_t D, bool in_heads_last, bool out_heads_last,
                unsigned grid, Schedule schedule) {
    INFO("rope B " << B << ", H " << H << ", T " << positions << ", D " << D << ", heads last: in "
                   << in_heads_last << ", out " << out_heads_last << ", grid " << grid
                   << (sizeof(T) == 4 ? ", float" : ", double"));
    const int64_t h = D / 2, rows = B * H * positions;
    auto layout = [&](bool heads_last) {
        return heads_last ? MatrixLayout{H, positions * H * D, D, H * D} : MatrixLayout{1, positions * D, 0, D};
    };
    const MatrixLayout in_at = layout(in_heads_last), out_at = layout(out_heads_last);
    std::vector<T> x = nc_test::normal<T>(rows * D, 71), c = nc_test::normal<T>(positions * D, 72),
                   s = nc_test::normal<T>(positions * D, 73), dy = nc_test::normal<T>(rows * D, 74);
    std::vector<T> y(rows * D, (T)NAN), dx(rows * D, (T)NAN);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, rope_kernel<T>, (const T*)x.data(),
                          (const T*)c.data(), (const T*)s.data(), y.data(), rows, D, positions, in_at, out_at);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, rope_backward_kernel<T>, (const T*)dy.data(),
                          (const T*)c.data(), (const T*)s.data(), dx.data(), rows, D, positions, in_at, out_at);
    // Channel e of a row at position t of y, as a function of that row of x.
    auto y_of = [&](const std::vector<Real>& xr, int64_t t, int64_t e) {
        const int64_t i = e % h;
        return e < h ? xr[i] * (Real)c[t * D + e] - xr[i + h] * (Real)s[t * D + e]
                     : xr[i + h] * (Real)c[t * D + e] + xr[i] * (Real)s[t * D + e];
    };
    std::vector<Real> y_want(rows * D, NAN), dx_want(rows * D, NAN);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t hd = 0; hd < H; ++hd)
            for (int64_t t = 0; t < positions; ++t) {
                // Where the row lies, written out here for each layout.
                auto start_in = [&](bool heads_last) {
                    return heads_last ? ((b * positions + t) * H + hd) * D : ((b * H + hd) * positions + t) * D;
                };
                const int64_t start = start_in(in_heads_last), out_start = start_in(out_heads_last);
                std::vector<Real> xr(x.begin() + start, x.begin() + start + D);
                for (int64_t e = 0; e < D; ++e) y_want[out_start + e] = y_of(xr, t, e);
                // dx_j = sum_e dy_e d y_e / d x_j, by central differences.
                for (int64_t j = 0; j < D; ++j) {
                    Real total = 0;
                    for (int64_t e = 0; e < D; ++e)
                        total += (Real)dy[start + e] * nc_test::derivative([&](Real z) {
                                     std::vector<Real> moved = xr;
                                     moved[j] = z;
                                     return y_of(moved, t, e);
                                 }, xr[j]);
                    dx_want[out_start + j] = total;
                }
            }
    const bool f32 = sizeof(T) == 4;
    nc_test::check_within("y", y, y_want, nc_test::scale_tolerance(y_want, f32, 4, 1e-14));
    nc_test::check_within("dx", dx, dx_want, nc_test::scale_tolerance(dx_want, f32, 4, 1e-9));
}

}  // namespace

TEST_CASE("emulated GPU: rope kernels equal the rotation and its differences", "[cuda-emulated][rope]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_rope<float>(3, 1, 4, 16, false, false, blocks_for(12 * 8), s);
        check_rope<float>(1, 1, 5, 6, false, false, 1, s);
        check_rope<float>(10, 1, 7, 16, false, false, 1, s);  // one block of 256 threads for 560 pairs: each strides on
        check_rope<double>(3, 1, 3, 10, false, false, 2, s);
        // Heads last in, out, or both.
        check_rope<float>(2, 3, 4, 8, true, false, blocks_for(24 * 4), s);
        check_rope<float>(2, 3, 4, 8, false, true, blocks_for(24 * 4), s);
        check_rope<float>(1, 5, 7, 16, true, true, 1, s);
        check_rope<double>(2, 2, 3, 10, true, false, 2, s);
        check_rope<double>(2, 2, 3, 10, false, true, 2, s);
    }
}
