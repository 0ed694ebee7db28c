// gemm_kernel_avx512.cpp — the 12 x 32 micro-kernel with AVX-512 intrinsics.
//
// AVX-512 has 32 vector registers of 16 floats. The accumulator block is
// 12 rows x 2 registers = 24 registers; each step p loads two B vectors
// (32 floats of one packed row) and, for each of the 12 rows, broadcasts one
// A value and issues two FMAs: 24 FMAs for 2 loads + 12 broadcasts, enough
// to keep both FMA ports busy (an FMA has ~4 cycles latency and the 24
// independent chains hide it).
//
// This file is compiled for AVX-512 whatever the build's -march says
// (`#pragma GCC target`), and its functions are only called after
// cpu_supports(SimdIsa::Avx512) checked the CPU at run time.
#include <immintrin.h>

#include "tensor/cpu/gemm_kernels.h"

// Nothing from the standard library is used below the pragma: an inline
// std:: function instantiated here would be compiled for this instruction
// set and could be picked by the linker for the whole program.
#pragma GCC target("avx512f,fma")

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 12, NR = 32;

void kernel_avx512(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c,
                   int64_t ldc, int m, int n, bool accumulate) {
    __m512 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    // Ask for the C block's cache lines now; they arrive while we compute.
    for (int i = 0; i < m; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc; ++p) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        for (int i = 0; i < MR; ++i) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }
    if (m == MR && n == NR) {  // a full block: straight from registers to C
        for (int i = 0; i < MR; ++i) {
            float* row = c + i * ldc;
            if (accumulate) {
                acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(row));
                acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(row + 16));
            }
            _mm512_storeu_ps(row, acc[i][0]);
            _mm512_storeu_ps(row + 16, acc[i][1]);
        }
        return;
    }
    // An edge block: only the first m rows and n columns exist in C.
    alignas(64) float block[MR][NR];
    for (int i = 0; i < MR; ++i) {
        _mm512_store_ps(block[i], acc[i][0]);
        _mm512_store_ps(block[i] + 16, acc[i][1]);
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + block[i][j] : block[i][j];
}
}  // namespace

const MicroKernel kAvx512Kernel{SimdIsa::Avx512, MR, NR, kernel_avx512};

float fma_loop_avx512(int64_t iterations) {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * (float)i);
    const __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(1e-5f);
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
    for (int i = 1; i < 12; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    float total = 0;
    for (float x : lanes) total += x;
    return total;
}

}  // namespace cpu
}  // namespace nc
