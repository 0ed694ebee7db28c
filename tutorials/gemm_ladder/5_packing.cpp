// Rung 5: packing (packing.h). Before the register blocks run, each slice
// of B and each block of A is copied into panels in exactly the order the
// kernel reads them: contiguous, so every cache line and page brought in is
// used whole and the prefetcher can follow; padded, so the kernel has no
// edge cases. The copy costs one pass over each block; every packed value
// then serves many FMAs (a value of B: every row block; a value of A: every
// column panel).
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
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    std::vector<float> a, b;
    float block[mr * nr];
    for (int64_t j0 = 0; j0 < n; j0 += nc)
        for (int64_t p0 = 0; p0 < n; p0 += kc) {
            int64_t nc_here = std::min(nc, n - j0), kc_here = std::min(kc, n - p0);
            ladder::pack_B(n, B, p0, kc_here, j0, nc_here, nr, b);
            for (int64_t i0 = 0; i0 < n; i0 += mc) {
                int64_t mc_here = std::min(mc, n - i0);
                ladder::pack_A(n, A, i0, mc_here, p0, kc_here, mr, a);
                for (int64_t i = 0; i < mc_here; i += mr)
                    for (int64_t j = 0; j < nc_here; j += nr) {
                        kernel_4x16(kc_here, &a[i / mr * kc_here * mr], &b[j / nr * kc_here * nr], block);
                        ladder::add_block(n, C, i0 + i, j0 + j, block, nr, std::min(mr, mc_here - i),
                                          std::min(nr, nc_here - j));
                    }
            }
        }
}

int main(int argc, char** argv) { return ladder::run(argc, argv, "5. packing", multiply); }
