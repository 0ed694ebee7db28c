// gemm_kernel_avx2.cpp — the 6 x 16 micro-kernel with AVX2 + FMA intrinsics.
//
// AVX2 has 16 vector registers of 8 floats: 6 rows x 2 registers = 12
// accumulators, 2 for the B row, 1 for the broadcast A value, the classic
// Haswell sgemm shape. Compiled for AVX2 whatever the build's -march says;
// only called after cpu_supports(SimdIsa::Avx2).
//
// Shapes: packed a [kc, 6], packed b [kc, 16] -> a 6 x 16 block of C (gemm.cpp).
#if defined(__x86_64__) || defined(__i386__)  // x86 only: empty on other CPUs

#include <immintrin.h>

#include "tensor/cpu/gemm_kernels.h"

// The Makefile compiles this file alone with -mavx2 -mfma (any compiler, g++ or
// clang). So nothing from the standard library is used in it: an inline
// std:: function instantiated here would be compiled for this instruction
// set and could be picked by the linker for the whole program.

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 6, NR = 16;

void kernel_avx2(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c,
                 int64_t ldc, int m, int n, bool accumulate) {
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; ++p) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        for (int i = 0; i < MR; ++i) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }
    if (m == MR && n == NR) {
        for (int i = 0; i < MR; ++i) {
            float* row = c + i * ldc;
            if (accumulate) {
                acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(row));
                acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(row + 8));
            }
            _mm256_storeu_ps(row, acc[i][0]);
            _mm256_storeu_ps(row + 8, acc[i][1]);
        }
        return;
    }
    alignas(32) float block[MR][NR];
    for (int i = 0; i < MR; ++i) {
        _mm256_store_ps(block[i], acc[i][0]);
        _mm256_store_ps(block[i] + 8, acc[i][1]);
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + block[i][j] : block[i][j];
}
}  // namespace

const MicroKernel kAvx2Kernel{SimdIsa::Avx2, MR, NR, kernel_avx2, nullptr};

float fma_loop_avx2(int64_t iterations) {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * (float)i);
    const __m256 scale = _mm256_set1_ps(0.9999f), shift = _mm256_set1_ps(1e-5f);
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], scale, shift);
    for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    float total = 0;
    for (float x : lanes) total += x;
    return total;
}

}  // namespace cpu
}  // namespace nc

#endif  // x86
