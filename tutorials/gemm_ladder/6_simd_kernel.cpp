// Rung 6: the micro-kernel in vector intrinsics (simd_kernels.h): AVX-512
// 12 x 32 or AVX2 6 x 16, whichever the CPU has (NEON 8 x 12 on ARM), on
// rung 5's packed panels.
// The loops around it are rung 5's (multiply_packed), with the kernel's
// block size.
//
// What is left: one core. The row blocks are independent, so the next rung
// shares them among threads.
#include <algorithm>
#include <cstdio>

#include "tutorials/gemm_ladder/ladder.h"
#include "tutorials/gemm_ladder/packing.h"
#include "tutorials/gemm_ladder/simd_kernels.h"

constexpr int64_t kc = 256, mc = 72, nc = 1024;  // mc: whole panels of 6, 8 or 12 rows
static const ladder::SimdKernel simd = ladder::best_simd_kernel();

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    ladder::multiply_packed(n, A, B, C, simd.kernel, simd.mr, simd.nr, mc, kc, nc);
}

int main(int argc, char** argv) {
    if (!simd.name) {
        std::printf("%-40s (this CPU has none of AVX2 + FMA, AVX-512, NEON)\n", "6. SIMD micro-kernel");
        return 0;
    }
    char name[64];
    std::snprintf(name, sizeof name, "6. %s micro-kernel %lld x %lld", simd.name, (long long)simd.mr,
                  (long long)simd.nr);
    return ladder::run(argc, argv, name, multiply);
}
