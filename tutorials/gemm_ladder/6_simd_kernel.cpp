// Rung 6: the micro-kernel in vector intrinsics (simd_kernels.h): AVX-512
// 12 x 32 or AVX2 6 x 16, whichever the CPU has, on rung 5's packed panels.
// The loops around it are rung 5's, with the kernel's block size.
//
// What is left: one core. The row blocks are independent, so the next rung
// shares them among threads.
#include <algorithm>
#include <cstdio>

#include "tutorials/gemm_ladder/ladder.h"
#include "tutorials/gemm_ladder/packing.h"
#include "tutorials/gemm_ladder/simd_kernels.h"

constexpr int64_t kc = 256, mc = 72, nc = 1024;  // mc: whole panels of 6 or 12 rows
static const ladder::SimdKernel simd = ladder::best_simd_kernel();

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    std::vector<float> a, b;
    const int64_t mr = simd.mr, nr = simd.nr;
    std::vector<float> block(mr * nr);
    for (int64_t j0 = 0; j0 < n; j0 += nc)
        for (int64_t p0 = 0; p0 < n; p0 += kc) {
            int64_t nc_here = std::min(nc, n - j0), kc_here = std::min(kc, n - p0);
            ladder::pack_B(n, B, p0, kc_here, j0, nc_here, nr, b);
            for (int64_t i0 = 0; i0 < n; i0 += mc) {
                int64_t mc_here = std::min(mc, n - i0);
                ladder::pack_A(n, A, i0, mc_here, p0, kc_here, mr, a);
                for (int64_t i = 0; i < mc_here; i += mr)
                    for (int64_t j = 0; j < nc_here; j += nr) {
                        simd.kernel(kc_here, &a[i / mr * kc_here * mr], &b[j / nr * kc_here * nr], block.data());
                        ladder::add_block(n, C, i0 + i, j0 + j, block.data(), nr, std::min(mr, mc_here - i),
                                          std::min(nr, nc_here - j));
                    }
            }
        }
}

int main(int argc, char** argv) {
    if (!simd.name) {
        std::printf("%-40s (this CPU has neither AVX2 + FMA nor AVX-512)\n", "6. SIMD micro-kernel");
        return 0;
    }
    char name[64];
    std::snprintf(name, sizeof name, "6. %s micro-kernel %lld x %lld", simd.name, (long long)simd.mr,
                  (long long)simd.nr);
    return ladder::run(argc, argv, name, multiply);
}
