// The check of exercise 9: every element against a float64 product
// (ladder::check_product, the ladder's own check), on
// sizes that are and are not whole blocks; the speed beside rung 2's loop
// order is printed, not asserted (a shared machine is noisy).
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "exercises/09_register_block/register_block.h"
#include "exercises/exercise.h"
#include "tutorials/gemm_ladder/ladder.h"  // check_product: every element against float64

static void loop_order(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < n; ++p)
            for (int64_t j = 0; j < n; ++j) C[i * n + j] += A[i * n + p] * B[p * n + j];
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
            std::string wrong = ladder::check_product(n, A.data(), B.data(), C.data());
            if (!wrong.empty()) throw std::runtime_error("n = " + std::to_string(n) + ": " + wrong);
        }
        const int64_t n = 256;
        std::vector<float> A(n * n, 0.5f), B(n * n, 0.25f), C(n * n);
        double yours = exercise::best_seconds([&] { exercise::multiply_register_blocked(n, A.data(), B.data(), C.data()); }, 3);
        double rung2 = exercise::best_seconds([&] { loop_order(n, A.data(), B.data(), C.data()); }, 3);
        std::printf("n = 256: %.1f GFLOP/s, rung 2's loop order %.1f (%.2fx)\n", 2.0 * n * n * n / yours / 1e9,
                    2.0 * n * n * n / rung2 / 1e9, rung2 / yours);
    });
}
