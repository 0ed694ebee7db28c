// test_cross_entropy_kernels.cpp — the GPU's cross-entropy kernels
// (cuda/cross_entropy_kernels.cuh), run on the CPU by the CUDA emulator
// (tests/cuda_emulator) with the grids cuda/cross_entropy.cu launches:
// the loss against its definition in long double, dlogits against long
// double central differences of it, and a target out of range written to
// the bad-index record.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda/cross_entropy_kernels.cuh"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;
using Real = long double;

Real logsumexp(const std::vector<Real>& row) {
    Real m = -INFINITY, total = 0;
    for (Real v : row) m = std::max(m, v);
    for (Real v : row) total += std::exp(v - m);
    return m + std::log(total);
}

// loss = logsumexp(row) - row[target], or 0 for an ignored or bad target.
Real loss_of_row(const std::vector<Real>& row, int64_t target, int64_t ignore_index) {
    if (target == ignore_index || target < 0 || target >= (int64_t)row.size()) return 0;
    return logsumexp(row) - row[target];
}

template <typename T>
void check_cross_entropy(int64_t N, int64_t V, unsigned grid, Schedule schedule) {
    INFO("N " << N << ", V " << V << ", grid " << grid << (sizeof(T) == 4 ? ", float" : ", double"));
    const int64_t ignore = -100;
    std::vector<T> logits = nc_test::normal<T>(N * V, 31), dlosses = nc_test::normal<T>(N, 32);
    for (T& v : logits) v *= 3;  // a model's logits span a few units
    // Targets: valid ones, the first and last class, an ignored row, and
    // (when there are 5 rows or more) one past the end.
    std::vector<int64_t> targets(N);
    for (int64_t n = 0; n < N; ++n) targets[n] = (n * 7 + 3) % V;
    targets[0] = 0;
    if (N > 1) targets[1] = V - 1;
    if (N > 2) targets[2] = ignore;
    if (N > 4) targets[4] = V;
    IndexErrorRecord record{kNoIndexError, 0, 0};
    std::vector<T> losses(N, (T)NAN), lse(N, (T)NAN), dlogits(N * V, (T)NAN);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, cross_entropy_kernel<T>, (const T*)logits.data(),
                          (const int64_t*)targets.data(), ignore, losses.data(), lse.data(), N, V, &record);
    cuda_emulator::launch(dim3(blocks_for(N * V)), dim3(kThreads), schedule, cross_entropy_backward_kernel<T>,
                          (const T*)dlosses.data(), (const T*)logits.data(), (const int64_t*)targets.data(),
                          (const T*)lse.data(), ignore, dlogits.data(), N, V);

    std::vector<Real> loss_want(N), lse_want(N), dlogits_want(N * V);
    for (int64_t n = 0; n < N; ++n) {
        std::vector<Real> row(logits.begin() + n * V, logits.begin() + (n + 1) * V);
        loss_want[n] = loss_of_row(row, targets[n], ignore);
        lse_want[n] = logsumexp(row);
        for (int64_t v = 0; v < V; ++v)
            dlogits_want[n * V + v] = dlosses[n] * nc_test::derivative([&](Real z) {
                                          std::vector<Real> r = row;
                                          r[v] = z;
                                          return loss_of_row(r, targets[n], ignore);
                                      }, row[v]);
    }
    const bool f32 = sizeof(T) == 4;
    nc_test::check_within("loss", losses, loss_want, nc_test::scale_tolerance(loss_want, f32, 16, 1e-12));
    nc_test::check_within("logsumexp", lse, lse_want, nc_test::scale_tolerance(lse_want, f32, 16, 1e-12));
    nc_test::check_within("dlogits", dlogits, dlogits_want, nc_test::scale_tolerance(dlogits_want, f32, 16, 1e-9));
    if (N > 4) {
        CHECK(record.op == kCrossEntropyOp);
        CHECK(record.index == V);
        CHECK(record.size == V);
    } else {
        CHECK(record.op == kNoIndexError);
    }
}

}  // namespace

TEST_CASE("emulated GPU: cross-entropy kernels equal the definition and its differences", "[cuda-emulated][loss]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_cross_entropy<float>(6, 1000, row_blocks(6), s);  // rows longer than the block
        check_cross_entropy<float>(6, 1000, 2, s);               // fewer blocks than rows
        check_cross_entropy<double>(3, 5, row_blocks(3), s);     // a vocabulary smaller than a warp
    }
}
