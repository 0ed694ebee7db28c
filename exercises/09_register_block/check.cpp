// The check of exercise 9: every element against a float64 product, on
// sizes that are and are not whole blocks; the speed beside rung 2's loop
// order is printed, not asserted (a shared machine is noisy).
#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "exercises/09_register_block/register_block.h"
#include "exercises/exercise.h"

static void loop_order(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < n; ++p)
            for (int64_t j = 0; j < n; ++j) C[i * n + j] += A[i * n + p] * B[p * n + j];
}

static double seconds(void (*multiply)(int64_t, const float*, const float*, float*), int64_t n, const float* A,
                      const float* B, float* C) {
    double best = 1e30;
    for (int run = 0; run < 3; ++run) {
        auto start = std::chrono::steady_clock::now();
        multiply(n, A, B, C);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

int main() {
    return exercise::run("9 (register block)", [] {
        std::mt19937 rng(9);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (int64_t n : {1, 3, 4, 16, 17, 64, 67, 100}) {
            std::vector<float> A(n * n), B(n * n), C(n * n, std::nanf(""));
            for (float& a : A) a = normal(rng);
            for (float& b : B) b = normal(rng);
            exercise::multiply_register_blocked(n, A.data(), B.data(), C.data());
            for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < n; ++j) {
                    double want = 0, size = 0;
                    for (int64_t p = 0; p < n; ++p) {
                        want += (double)A[i * n + p] * B[p * n + j];
                        size += std::fabs((double)A[i * n + p] * B[p * n + j]);
                    }
                    // float32 sums of n terms: within n 2^-24 of the terms' size (4x margin).
                    if (!(std::fabs(C[i * n + j] - want) <= 4.0 * n * std::ldexp(1.0, -24) * size + 1e-30))
                        throw std::runtime_error("n = " + std::to_string(n) + ": C[" + std::to_string(i) + "][" +
                                                 std::to_string(j) + "] = " + exercise::number(C[i * n + j]) +
                                                 ", the float64 product gives " + exercise::number(want));
                }
        }
        const int64_t n = 256;
        std::vector<float> A(n * n, 0.5f), B(n * n, 0.25f), C(n * n);
        double yours = seconds(exercise::multiply_register_blocked, n, A.data(), B.data(), C.data());
        double rung2 = seconds(loop_order, n, A.data(), B.data(), C.data());
        std::printf("n = 256: %.1f GFLOP/s, rung 2's loop order %.1f (%.2fx)\n", 2.0 * n * n * n / yours / 1e9,
                    2.0 * n * n * n / rung2 / 1e9, rung2 / yours);
    });
}
