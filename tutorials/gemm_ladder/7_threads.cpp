// Rung 7: threads. Rung 6 (multiply_packed's loops, packing.h), with OpenMP
// sharing the row blocks of each slice: B's slice is packed once for all
// threads, then each thread packs its own blocks of A (its own buffer) and
// computes their rows of C. No two threads write the same element of C, so nothing needs a
// lock; the implicit barrier at the end of each `omp for` keeps a slice's
// packed B alive until every thread is done with it.
//
// The library's GEMM (tensor/cpu/gemm.cpp) goes further: AVX-512 kernels,
// transposed operands packed in registers, B packed into two buffers by
// turns, and rows that move between threads running at different speeds.
#include <omp.h>

#include <algorithm>
#include <cstdio>

#include "tutorials/gemm_ladder/ladder.h"
#include "tutorials/gemm_ladder/packing.h"
#include "tutorials/gemm_ladder/simd_kernels.h"

constexpr int64_t kc = 256, mc = 72, nc = 1024;
static const ladder::SimdKernel simd = ladder::best_simd_kernel();

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    const int64_t mr = simd.mr, nr = simd.nr;
    std::vector<float> b;
#pragma omp parallel
    {
        std::vector<float> a;
        std::vector<float> block(mr * nr);
        for (int64_t j0 = 0; j0 < n; j0 += nc)
            for (int64_t p0 = 0; p0 < n; p0 += kc) {
                int64_t nc_here = std::min(nc, n - j0), kc_here = std::min(kc, n - p0);
#pragma omp single
                ladder::pack_B(n, B, p0, kc_here, j0, nc_here, nr, b);  // the others wait at its end
#pragma omp for schedule(static)
                for (int64_t i0 = 0; i0 < n; i0 += mc) {
                    int64_t mc_here = std::min(mc, n - i0);
                    ladder::pack_A(n, A, i0, mc_here, p0, kc_here, mr, a);
                    ladder::multiply_panels(n, C, a, b, i0, mc_here, j0, nc_here, kc_here, mr, nr, simd.kernel,
                                            block.data());
                }
            }
    }
}

int main(int argc, char** argv) {
    if (!simd.name) {
        std::printf("%-40s (this CPU has none of AVX2 + FMA, AVX-512, NEON)\n", "7. threads");
        return 0;
    }
    char name[64];
    std::snprintf(name, sizeof name, "7. %s, %d threads", simd.name, omp_get_max_threads());
    return ladder::run(argc, argv, name, multiply);
}
