// test_norms_kernels.cpp — the GPU's LayerNorm and RMSNorm kernels
// (cuda/norms_kernels.cuh, and the column sums of their parameter
// gradients), run on the CPU by the CUDA emulator (tests/cuda_emulator)
// with the grids cuda/norms.cu launches. The forward is checked against the
// definition in long double; every gradient against central differences of
// that definition, also in long double (no backward formula is written here).
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda/norms_kernels.cuh"
#include "tests/emulated/emulated_column_sums.h"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;

using Real = long double;

// One row of the norm, by definition: y = gamma (x - mean) / sqrt(var + eps) + beta
// (LayerNorm), or y = gamma x / sqrt(mean(x^2) + eps) (RMSNorm).
std::vector<Real> norm_row(const std::vector<Real>& x, const std::vector<Real>& gamma, const std::vector<Real>& beta,
                           bool centered, Real eps) {
    const size_t C = x.size();
    Real mean = 0, var = 0;
    if (centered) {
        for (Real v : x) mean += v;
        mean /= C;
    }
    for (Real v : x) var += (v - mean) * (v - mean);
    var /= C;
    std::vector<Real> y(C);
    for (size_t c = 0; c < C; ++c)
        y[c] = (x[c] - mean) / std::sqrt(var + eps) * (gamma.empty() ? 1 : gamma[c]) + (beta.empty() ? 0 : beta[c]);
    return y;
}

// Within a few ulp of the largest reference value for float (the kernels
// sum in double but take T in, keep mean and rstd as T, and give T out);
// for double, the differences' own error (~1e-11 of the scale) dominates.
template <typename T>
void check_close(const char* what, const std::vector<T>& got, const std::vector<Real>& want) {
    nc_test::check_within(what, got, want, nc_test::scale_tolerance(want, sizeof(T) == 4, 64, 1e-9));
}

template <typename T>
void check_norm(int64_t rows, int64_t C, bool centered, bool affine, bool bias, unsigned grid, Schedule schedule) {
    INFO((centered ? "LayerNorm" : "RMSNorm") << ", rows " << rows << ", C " << C << (affine ? ", gamma" : "")
                                              << (bias ? ", beta" : "") << ", grid " << grid
                                              << (sizeof(T) == 4 ? ", float" : ", double"));
    const double eps = 1e-5;
    std::vector<T> x = nc_test::normal<T>(rows * C, 21, 0.3), dy = nc_test::normal<T>(rows * C, 22, 0.0);
    std::vector<T> gamma = affine ? nc_test::normal<T>(C, 23, 1.0) : std::vector<T>();
    std::vector<T> beta = bias ? nc_test::normal<T>(C, 24, 0.0) : std::vector<T>();
    const T* g = affine ? gamma.data() : nullptr;
    const T* b = bias ? beta.data() : nullptr;

    std::vector<T> y(rows * C, (T)NAN), mean(rows, (T)NAN), rstd(rows, (T)NAN);
    // norms.cu: no mean (and no beta) says RMSNorm.
    T* mean_out = centered ? mean.data() : nullptr;
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, norm_forward_kernel<T>, (const T*)x.data(), g,
                          centered ? b : (const T*)nullptr, eps, y.data(), mean_out, rstd.data(), rows, C);
    std::vector<T> dx(rows * C, (T)NAN), dgamma(C, (T)NAN), dbeta(C, (T)NAN);
    const T* mean_or_null = mean_out;
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, norm_backward_kernel<T>, (const T*)dy.data(),
                          (const T*)x.data(), g, mean_or_null, (const T*)rstd.data(), dx.data(), rows, C);
    if (affine)
        nc_test::emulated_column_sums(NormGammaTerm<T>{dy.data(), x.data(), mean_or_null, rstd.data(), C}, dgamma.data(),
                                      rows, C, schedule);
    if (bias) nc_test::emulated_column_sums(MatrixEntry<T>{dy.data(), C}, dbeta.data(), rows, C, schedule);

    // The references: y by definition, and the gradients of L = sum dy * y.
    std::vector<Real> gamma_r(gamma.begin(), gamma.end()), beta_r(beta.begin(), beta.end());
    std::vector<Real> y_want(rows * C), dx_want(rows * C), dgamma_want(C, 0), dbeta_want(C, 0);
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<Real> xr(x.begin() + r * C, x.begin() + (r + 1) * C), dyr(dy.begin() + r * C, dy.begin() + (r + 1) * C);
        auto loss = [&](const std::vector<Real>& xs, const std::vector<Real>& gs, const std::vector<Real>& bs) {
            std::vector<Real> ys = norm_row(xs, gs, bs, centered, eps);
            Real total = 0;
            for (int64_t c = 0; c < C; ++c) total += dyr[c] * ys[c];
            return total;
        };
        std::vector<Real> yr = norm_row(xr, gamma_r, beta_r, centered, eps);
        for (int64_t c = 0; c < C; ++c) {
            y_want[r * C + c] = yr[c];
            dx_want[r * C + c] = nc_test::derivative([&](Real z) { auto xs = xr; xs[c] = z; return loss(xs, gamma_r, beta_r); }, xr[c]);
            if (affine)
                dgamma_want[c] += nc_test::derivative([&](Real z) { auto gs = gamma_r; gs[c] = z; return loss(xr, gs, beta_r); }, gamma_r[c]);
            if (bias)
                dbeta_want[c] += nc_test::derivative([&](Real z) { auto bs = beta_r; bs[c] = z; return loss(xr, gamma_r, bs); }, beta_r[c]);
        }
    }
    check_close("y", y, y_want);
    check_close("dx", dx, dx_want);
    if (affine) check_close("dgamma", dgamma, dgamma_want);
    if (bias) check_close("dbeta", dbeta, dbeta_want);
}

}  // namespace

TEST_CASE("emulated GPU: LayerNorm and RMSNorm kernels equal the definition and its differences", "[cuda-emulated][norms]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst})
        for (bool centered : {true, false}) {
            // Rows longer than the block (each thread strides), a row shorter
            // than a warp, fewer blocks than rows; with and without parameters.
            check_norm<float>(5, 300, centered, true, centered, row_blocks(5), s);
            check_norm<float>(4, 7, centered, true, centered, 2, s);
            check_norm<float>(3, 40, centered, false, false, row_blocks(3), s);
            check_norm<double>(3, 300, centered, true, centered, 2, s);
        }
}
