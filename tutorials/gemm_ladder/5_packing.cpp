// Rung 5: packing (packing.h). Before the register blocks run, each slice
// of B and each block of A is copied into panels in exactly the order the
// kernel reads them: contiguous, so every cache line and page brought in is
// used whole and the prefetcher can follow; padded, so the kernel has no
// edge cases. The copy costs one pass over each block; every packed value
// then serves many FMAs (a value of B: every row block; a value of A: every
// column panel). The loops that pack and walk the blocks are
// multiply_packed (packing.h); this file adds the kernel for them.
//
// What is left: the kernel is still plain C++, and how well the compiler
// maps its 4 x 16 accumulators to registers decides the speed.
#include <algorithm>

#include "tutorials/gemm_ladder/ladder.h"
#include "tutorials/gemm_ladder/packing.h"

constexpr int64_t kc = 256, mc = 64, nc = 1024;
constexpr int64_t mr = 4, nr = 16;

// One mr x nr block of C from a packed panel of A and one of B, kc steps.
static void kernel_4x16(int64_t kc_here, const float* a, const float* b, float* block) {
    float c[mr][nr] = {};
    for (int64_t p = 0; p < kc_here; ++p)
        for (int64_t r = 0; r < mr; ++r) {
            float a_rp = a[p * mr + r];
#pragma omp simd
            for (int64_t s = 0; s < nr; ++s) c[r][s] += a_rp * b[p * nr + s];
        }
    for (int64_t r = 0; r < mr; ++r)
        for (int64_t s = 0; s < nr; ++s) block[r * nr + s] = c[r][s];
}

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    ladder::multiply_packed(n, A, B, C, kernel_4x16, mr, nr, mc, kc, nc);
}

int main(int argc, char** argv) { return ladder::run(argc, argv, "5. packing", multiply); }
