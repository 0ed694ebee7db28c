// Rung 2: the same sums in another order. Swapping the two inner loops
// gives C[i][:] += A[i][p] * B[p][:]: the inner loop now runs along a row of
// B and a row of C, both contiguous, and the compiler turns it into vector
// FMAs (8 or 16 floats at once).
//
// It is still bound by memory: each FMA loads a value of B and loads and
// stores a value of C, three memory operations per two FLOPs.
#include "tutorials/gemm_ladder/ladder.h"

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < n; ++p) {
            float a = A[i * n + p];
            for (int64_t j = 0; j < n; ++j) C[i * n + j] += a * B[p * n + j];
        }
}

int main(int argc, char** argv) { return ladder::run(argc, argv, "2. loop order i-p-j", multiply); }
