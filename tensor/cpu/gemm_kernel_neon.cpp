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

}  // namespace

const MicroKernel kNeonKernel{SimdIsa::Neon, MR, NR, kernel_neon, nullptr};

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
