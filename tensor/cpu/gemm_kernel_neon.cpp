// gemm_kernel_neon.cpp — the 8 x 12 micro-kernel with NEON intrinsics, for
// 64-bit ARM (AArch64: Apple Silicon, Graviton, Raspberry Pi 4/5, Ampere).
//
// AArch64's Advanced SIMD ("NEON") has 32 vector registers of 4 floats, and
// every AArch64 CPU has it, so this kernel needs no run-time check. The
// accumulator block is 8 rows x 3 registers (12 floats) = 24 registers;
// each step p loads the packed A column (8 floats: 2 registers) and the
// packed B row (12 floats: 3 registers), 29 registers in all, and issues 24
// FMAs. Unlike x86, NEON's FMA can take one multiplicand from a *lane* of
// another register (vfmaq_laneq_f32(acc, b, a, lane) = acc + b * a[lane]),
// so A needs no broadcast: two loads serve all eight rows.
//
// Why 8 x 12 and not, say, 12 x 8 or 8 x 16: 8 x 16 would need 32
// accumulators plus operands (more than 32 registers); 8 x 12 and 12 x 8
// both fit with 24 FMAs per 5 loads. 8 x 12 is the shape BLIS uses on
// ARMv8, and it keeps A's loads to two registers. An FMA's result is ready
// about 4 cycles after it starts and cores start 2 to 4 per cycle, so the 24
// independent accumulators keep the units busy.
//
// Shapes: packed a [kc, 8], packed b [kc, 12] -> an 8 x 12 block of C (gemm.cpp).
//
// Compiled only for AArch64 (the guard below); on other CPUs this file is
// empty and SimdIsa::Neon is never supported.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "tensor/cpu/gemm_kernels.h"

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 8, NR = 12;

// Row r's three accumulators += a[r] * (b0 b1 b2), a[r] being lane L of the
// register `a` (the lane must be a compile-time constant, hence the template).
template <int L>
inline void row_update(float32x4_t acc[3], float32x4_t a, float32x4_t b0, float32x4_t b1, float32x4_t b2) {
    acc[0] = vfmaq_laneq_f32(acc[0], b0, a, L);
    acc[1] = vfmaq_laneq_f32(acc[1], b1, a, L);
    acc[2] = vfmaq_laneq_f32(acc[2], b2, a, L);
}

void kernel_neon(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t ldc,
                 int m, int n, bool accumulate) {
    float32x4_t acc[MR][3];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = acc[i][2] = vdupq_n_f32(0.0f);
    for (int64_t p = 0; p < kc; ++p) {
        float32x4_t a_low = vld1q_f32(a), a_high = vld1q_f32(a + 4);  // rows 0-3 and 4-7
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        row_update<0>(acc[0], a_low, b0, b1, b2);
        row_update<1>(acc[1], a_low, b0, b1, b2);
        row_update<2>(acc[2], a_low, b0, b1, b2);
        row_update<3>(acc[3], a_low, b0, b1, b2);
        row_update<0>(acc[4], a_high, b0, b1, b2);
        row_update<1>(acc[5], a_high, b0, b1, b2);
        row_update<2>(acc[6], a_high, b0, b1, b2);
        row_update<3>(acc[7], a_high, b0, b1, b2);
        a += MR;
        b += NR;
    }
    if (m == MR && n == NR) {  // a full block: straight from registers to C
        for (int i = 0; i < MR; ++i) {
            float* row = c + i * ldc;
            for (int j = 0; j < 3; ++j) {
                float32x4_t sum = accumulate ? vaddq_f32(acc[i][j], vld1q_f32(row + 4 * j)) : acc[i][j];
                vst1q_f32(row + 4 * j, sum);
            }
        }
        return;
    }
    // An edge block: only the first m rows and n columns exist in C.
    float block[MR][NR];
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < 3; ++j) vst1q_f32(block[i] + 4 * j, acc[i][j]);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + block[i][j] : block[i][j];
}

// The dot products of a one-row product with B in 16 bits (gemm_kernels.h's
// DotColumns16Fn), one column at a time: the 16 partial sums in four
// registers (partials 0-3, 4-7, 8-11, 12-15: four independent chains),
// 16 numbers of B widened per step. A bfloat16 is the top half of a
// float32, so shifting its bits up 16 widens it; a float16 is widened by
// the instruction AArch64 has for it (fcvtl). The last K mod 16 terms go
// through zero-filled copies, adding 0 x 0 in the lanes past K.
template <bool BFLOAT16>
inline void widen_16(uint16x8_t low_half, uint16x8_t high_half, float32x4_t out[4]) {
    const uint16x8_t halves[2] = {low_half, high_half};
    for (int h = 0; h < 2; ++h) {
        if (BFLOAT16) {
            out[2 * h] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(halves[h]), 16));
            out[2 * h + 1] = vreinterpretq_f32_u32(vshll_high_n_u16(halves[h], 16));
        } else {
            const float16x8_t f = vreinterpretq_f16_u16(halves[h]);
            out[2 * h] = vcvt_f32_f16(vget_low_f16(f));
            out[2 * h + 1] = vcvt_high_f32_f16(f);
        }
    }
}

template <bool BFLOAT16>
void dot_columns_16bit_with(int64_t K, const float* a, const uint16_t* b, int64_t b_cs, int64_t columns, float* c,
                            bool accumulate) {
    for (int64_t j = 0; j < columns; ++j) {
        const uint16_t* w = b + j * b_cs;
        float32x4_t partial[4];
        for (int q = 0; q < 4; ++q) partial[q] = vdupq_n_f32(0.0f);
        float32x4_t wide[4];
        int64_t k = 0;
        for (; k + 16 <= K; k += 16) {
            widen_16<BFLOAT16>(vld1q_u16(w + k), vld1q_u16(w + k + 8), wide);
            for (int q = 0; q < 4; ++q) partial[q] = vfmaq_f32(partial[q], vld1q_f32(a + k + 4 * q), wide[q]);
        }
        if (k < K) {
            uint16_t w_rest[16] = {};
            float a_rest[16] = {};
            for (int64_t t = k; t < K; ++t) w_rest[t - k] = w[t], a_rest[t - k] = a[t];
            widen_16<BFLOAT16>(vld1q_u16(w_rest), vld1q_u16(w_rest + 8), wide);
            for (int q = 0; q < 4; ++q) partial[q] = vfmaq_f32(partial[q], vld1q_f32(a_rest + 4 * q), wide[q]);
        }
        float lanes[16];
        for (int q = 0; q < 4; ++q) vst1q_f32(lanes + 4 * q, partial[q]);
        float sum = 0;
        for (int i = 0; i < 16; ++i) sum += lanes[i];
        c[j] = accumulate ? c[j] + sum : sum;
    }
}

void dot_columns_16bit_neon(int64_t K, const float* a, const uint16_t* b, int64_t b_cs, int64_t columns,
                            bool bfloat16, float* c, bool accumulate, bool /*streaming: always one column at a time*/) {
    if (bfloat16) dot_columns_16bit_with<true>(K, a, b, b_cs, columns, c, accumulate);
    else dot_columns_16bit_with<false>(K, a, b, b_cs, columns, c, accumulate);
}

}  // namespace

const MicroKernel kNeonKernel{SimdIsa::Neon, MR, NR, kernel_neon, nullptr, nullptr, nullptr, dot_columns_16bit_neon};

// 12 independent chains of 8 floats (2 registers each): 24 FMAs in flight,
// enough for cores with 4 FMA units of 4-cycle latency.
float fma_loop_neon(int64_t iterations) {
    float32x4_t acc[12][2];
    for (int i = 0; i < 12; ++i) acc[i][0] = acc[i][1] = vdupq_n_f32(0.001f * (float)i);
    const float32x4_t scale = vdupq_n_f32(0.9999f), shift = vdupq_n_f32(1e-5f);
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i) {
            acc[i][0] = vfmaq_f32(shift, acc[i][0], scale);
            acc[i][1] = vfmaq_f32(shift, acc[i][1], scale);
        }
    float32x4_t total = vdupq_n_f32(0.0f);
    for (int i = 0; i < 12; ++i) total = vaddq_f32(total, vaddq_f32(acc[i][0], acc[i][1]));
    return vaddvq_f32(total);
}

}  // namespace cpu
}  // namespace nc

#endif  // __aarch64__
