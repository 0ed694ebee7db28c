// ladder.h — what every rung of chapter 9's GEMM ladder shares: the
// matrices, the float64 reference, the timing and the printed row.
//
// Each rung is its own program (tutorials/gemm_ladder/N_*.cpp) with one
// function, multiply(n, A, B, C), that computes C = A B for row-major
// n x n float32 matrices. run() times it (the best of several calls),
// checks every element against a float64 product, and prints one row of
// the table that `tools/gemm_ladder.sh` assembles:
//
//   3. register block 4 x 16            12.34 GFLOP/s   max error 2.1e-07
//
// `make test` runs every rung at n = 67 (odd, so every edge case runs);
// `make docs` at n = 512 writes the table chapter 9 shows.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace ladder {

using Multiply = void (*)(int64_t n, const float* A, const float* B, float* C);

// The size from the command line (default 512), refused unless it is a
// whole number from 1 to 4096.
inline int64_t size_argument(int argc, char** argv) {
    if (argc < 2) return 512;
    char* end = nullptr;
    long n = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
        std::fprintf(stderr, "%s: the size must be a whole number from 1 to 4096, not \"%s\"\n", argv[0], argv[1]);
        std::exit(2);
    }
    return n;
}

// Checks C = A B (row-major n x n) against the product in float64. Float32
// rounding of a sum of n terms may be off by about n 2^-24 of the size of
// its terms, sum_p |A_ip B_pj| (we allow 4x), whatever the summation order.
// Returns "" and the largest error in `worst`, or the first element that is
// off, described.
inline std::string check_product(int64_t n, const float* A, const float* B, const float* C, double* worst = nullptr) {
    std::vector<double> want(n * n), size(n * n);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < n; ++p) {
            double a = A[i * n + p];
            for (int64_t j = 0; j < n; ++j) {
                want[i * n + j] += a * B[p * n + j];
                size[i * n + j] += std::fabs(a * B[p * n + j]);
            }
        }
    double largest = 0;
    for (int64_t e = 0; e < n * n; ++e) {
        double error = std::fabs(C[e] - want[e]);
        if (!(error <= 4.0 * (double)n * std::ldexp(1.0, -24) * size[e] + 1e-30))
            return "C[" + std::to_string(e / n) + "][" + std::to_string(e % n) + "] = " + std::to_string(C[e]) +
                   ", the float64 product gives " + std::to_string(want[e]);
        largest = std::max(largest, error);
    }
    if (worst) *worst = largest;
    return "";
}

inline int run(int argc, char** argv, const char* name, Multiply multiply) {
    const int64_t n = size_argument(argc, argv);
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> A(n * n), B(n * n), C(n * n);
    for (float& a : A) a = normal(rng);
    for (float& b : B) b = normal(rng);

    // Best of several calls: at least 3, and at least 0.3 s in all.
    double best = 1e30, spent = 0;
    for (int call = 0; call < 3 || (spent < 0.3 && call < 1000); ++call) {
        std::fill(C.begin(), C.end(), std::nanf(""));  // a rung that skips an element fails the check
        auto start = std::chrono::steady_clock::now();
        multiply(n, A.data(), B.data(), C.data());
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, seconds);
        spent += seconds;
    }

    double worst = 0;
    std::string wrong = check_product(n, A.data(), B.data(), C.data(), &worst);
    if (!wrong.empty()) {
        std::fprintf(stderr, "%s: %s\n", name, wrong.c_str());
        return 1;
    }
    std::printf("%-40s %9.2f GFLOP/s   max error %.1e\n", name, 2.0 * n * n * n / best / 1e9, worst);
    return 0;
}

}  // namespace ladder
