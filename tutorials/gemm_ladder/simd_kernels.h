// simd_kernels.h — rungs 6 and 7: the micro-kernel written with vector
// intrinsics, so that nothing is left to the compiler's judgement, in the
// widest instruction set the CPU has.
//
// AVX2 (16 registers of 8 floats): a 6 x 16 block of C in 12 registers
// (6 rows x 2). Each step p loads one packed row of B (2 registers) and, for
// each of the 6 rows, broadcasts one value of A and issues 2 FMAs: 12 FMAs
// for 2 loads and 6 broadcasts. AVX-512 (32 registers of 16 floats): the
// same with 12 rows of 32 floats in 24 registers, 24 FMAs per step.
//
// Why so many accumulators: an FMA's result is ready 4 cycles after it
// starts, and a core starts two per cycle, so at least 8 independent sums
// must be in flight or the units wait. Why the loads do not limit it: two
// load ports serve the 8 (or 14) loads of a step in 4 (or 7) cycles, while
// the two FMA units need 6 (or 12) for its FMAs. The arithmetic sets the
// pace, as it should.
//
// NEON (64-bit ARM: 32 registers of 4 floats): an 8 x 12 block of C in 24
// registers (8 rows x 3). Each step loads 8 values of A (2 registers) and
// 12 of B (3 registers), and each FMA takes its A value from a *lane* of an
// A register (vfmaq_laneq_f32), so no broadcasts are needed: 24 FMAs for 5
// loads, 29 registers of the 32.
//
// Only the kernels of the CPU family being compiled for are built: the AVX
// ones on x86-64, the NEON one on ARM.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <cstdint>

#include "tutorials/gemm_ladder/packing.h"  // MicroKernel

namespace ladder {

struct SimdKernel {
    const char* name;  // "avx512", "avx2", "neon", or nullptr when the CPU has none of them
    int64_t mr, nr;
    MicroKernel kernel;
};

#if defined(__x86_64__) || defined(__i386__)
// Each kernel is compiled for its instruction set whatever the build's
// -march, and called only when the CPU has it (best_simd_kernel).
__attribute__((target("avx2,fma"))) inline void kernel_avx2_6x16(int64_t kc, const float* a, const float* b,
                                                                   float* block) {
    __m256 c[6][2];
    for (int r = 0; r < 6; ++r) c[r][0] = c[r][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; ++p) {
        __m256 b0 = _mm256_loadu_ps(b + p * 16), b1 = _mm256_loadu_ps(b + p * 16 + 8);
        for (int r = 0; r < 6; ++r) {
            __m256 a_rp = _mm256_broadcast_ss(a + p * 6 + r);
            c[r][0] = _mm256_fmadd_ps(a_rp, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(a_rp, b1, c[r][1]);
        }
    }
    for (int r = 0; r < 6; ++r) {
        _mm256_storeu_ps(block + r * 16, c[r][0]);
        _mm256_storeu_ps(block + r * 16 + 8, c[r][1]);
    }
}

__attribute__((target("avx512f"))) inline void kernel_avx512_12x32(int64_t kc, const float* a, const float* b,
                                                                     float* block) {
    __m512 c[12][2];
    for (int r = 0; r < 12; ++r) c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kc; ++p) {
        __m512 b0 = _mm512_loadu_ps(b + p * 32), b1 = _mm512_loadu_ps(b + p * 32 + 16);
        for (int r = 0; r < 12; ++r) {
            __m512 a_rp = _mm512_set1_ps(a[p * 12 + r]);
            c[r][0] = _mm512_fmadd_ps(a_rp, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a_rp, b1, c[r][1]);
        }
    }
    for (int r = 0; r < 12; ++r) {
        _mm512_storeu_ps(block + r * 32, c[r][0]);
        _mm512_storeu_ps(block + r * 32 + 16, c[r][1]);
    }
}

#endif  // x86

#if defined(__aarch64__)
// Row r of the block += a[lane L of `a`] * (b0 b1 b2); the lane must be a
// compile-time constant, hence the template.
template <int L>
inline void neon_row(float32x4_t c[3], float32x4_t a, float32x4_t b0, float32x4_t b1, float32x4_t b2) {
    c[0] = vfmaq_laneq_f32(c[0], b0, a, L);
    c[1] = vfmaq_laneq_f32(c[1], b1, a, L);
    c[2] = vfmaq_laneq_f32(c[2], b2, a, L);
}

inline void kernel_neon_8x12(int64_t kc, const float* a, const float* b, float* block) {
    float32x4_t c[8][3];
    for (int r = 0; r < 8; ++r) c[r][0] = c[r][1] = c[r][2] = vdupq_n_f32(0.0f);
    for (int64_t p = 0; p < kc; ++p) {
        float32x4_t a_low = vld1q_f32(a + p * 8), a_high = vld1q_f32(a + p * 8 + 4);
        float32x4_t b0 = vld1q_f32(b + p * 12), b1 = vld1q_f32(b + p * 12 + 4), b2 = vld1q_f32(b + p * 12 + 8);
        neon_row<0>(c[0], a_low, b0, b1, b2);
        neon_row<1>(c[1], a_low, b0, b1, b2);
        neon_row<2>(c[2], a_low, b0, b1, b2);
        neon_row<3>(c[3], a_low, b0, b1, b2);
        neon_row<0>(c[4], a_high, b0, b1, b2);
        neon_row<1>(c[5], a_high, b0, b1, b2);
        neon_row<2>(c[6], a_high, b0, b1, b2);
        neon_row<3>(c[7], a_high, b0, b1, b2);
    }
    for (int r = 0; r < 8; ++r)
        for (int j = 0; j < 3; ++j) vst1q_f32(block + r * 12 + 4 * j, c[r][j]);
}
#endif  // ARM

inline SimdKernel best_simd_kernel() {
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx512f")) return {"avx512", 12, 32, kernel_avx512_12x32};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", 6, 16, kernel_avx2_6x16};
#elif defined(__aarch64__)
    return {"neon", 8, 12, kernel_neon_8x12};  // every 64-bit ARM CPU has NEON
#endif
    return {nullptr, 0, 0, nullptr};
}

}  // namespace ladder
