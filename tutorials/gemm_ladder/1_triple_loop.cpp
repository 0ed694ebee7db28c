// Rung 1 of chapter 9's GEMM ladder: the formula as it is written,
// C[i][j] = sum_p A[i][p] B[p][j], one dot product per element.
//
// The inner loop walks down a column of B: consecutive p are n floats
// apart, so every multiply-add touches a new cache line, and a line's other
// 15 floats are needed again only n iterations of j later, when the cache
// has long evicted it.
#include "tutorials/gemm_ladder/ladder.h"

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float total = 0;
            for (int64_t p = 0; p < n; ++p) total += A[i * n + p] * B[p * n + j];
            C[i * n + j] = total;
        }
}

int main(int argc, char** argv) { return ladder::run(argc, argv, "1. triple loop i-j-p", multiply); }
