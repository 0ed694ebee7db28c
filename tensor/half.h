// half.h — the two 16-bit floating formats and their conversions, one rule
// for the CPU loops and the CUDA kernels:
//
//   bfloat16  1 sign, 8 exponent, 7 mantissa bits: float32's range with 3
//             significant digits; float32's upper half.
//   float16   IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa
//             bits; 3.3 digits but a range of only 6e-8 .. 65504.
//
// float -> 16 bits rounds to nearest, ties to even (what PyTorch, CUDA's
// __float2bfloat16_rn / __float2half_rn and the hardware do); a NaN stays
// a (quiet) NaN of the same sign, a value beyond the range becomes +-inf.
// 16 bits -> float is exact. A float64 value goes through float32 first.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/host_device.h"

namespace nc {

struct BFloat16 {
    uint16_t bits;
};
struct Float16 {
    uint16_t bits;
};

NC_HOST_DEVICE inline uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
NC_HOST_DEVICE inline float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// bfloat16 keeps float32's top 16 bits. Rounding to nearest even adds half
// an ulp of the result (0x7fff) plus the lowest kept bit (so that an exact
// tie rounds up only from an odd value), then drops the low 16 bits; a
// carry moves into the exponent, and past the largest finite value to inf.
NC_HOST_DEVICE inline BFloat16 to_bfloat16(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {(uint16_t)((u >> 16) | 0x0040u)};  // NaN: quiet, sign kept
    u += 0x7fffu + ((u >> 16) & 1u);
    return {(uint16_t)(u >> 16)};
}
NC_HOST_DEVICE inline float to_float(BFloat16 h) { return bits_to_float((uint32_t)h.bits << 16); }

// float16 from float32's sign and magnitude a (exponent bias 127, 23
// mantissa bits). Each case is computed for every input and one picked at
// the end, without a branch, so that a loop of conversions (a float32
// tensor cast to float16, before each product of float16 training) becomes
// vector code. With a branch per case (the subnormal one shifting by a count
// that depends on the value) the cast ran 2.3-2.9 times slower on two Zen 4
// cores (three alternating pairs; 4.4 against 12.6 billion values a second
// in the calmest), with the same 16 bits for every one of the 2^32 float32
// patterns. The form matters: with three choices (subnormal, overflow, NaN)
// GCC vectorized a small test loop but not normcore's copy loop, where it
// merged two range tests into one choice it has no vector instruction for;
// hence one choice, a least-of and an OR below
// (bench/results/float16-rounding-vectorized-2026-12-07.txt).
NC_HOST_DEVICE inline Float16 to_float16(float f) {
    uint32_t u = float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    // A normal: rebias the exponent (127 -> 15: subtract 112 << 23) and round
    // 23 mantissa bits to 10 as bfloat16 rounds 16 to 0: add half an ulp
    // (0xfff) plus the lowest kept bit (ties to even), drop 13 bits; a carry
    // moves into the exponent. (Bit 13 of a is bit 13 of a - (112 << 23).)
    uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
    // 65504 is the largest float16; from 65520 (half an ulp above) a value
    // rounds to 65536, which float16 cannot hold: inf (0x7c00), which is
    // where the rounding above lands for 65520 and beyond, float32's inf and
    // NaNs included: so the least of the two.
    normal = normal < 0x7c00u ? normal : 0x7c00u;
    // Below 2^-14, float16's smallest normal, a value is a subnormal: a count
    // of 2^-24. Added to 0.5, whose ulp in float32 is exactly 2^-24, it is
    // rounded to that unit, to nearest even, by the float32 addition itself;
    // the count is then the sum's bits past 0.5's (0x3f000000). Below 2^-25
    // the sum is 0.5 again: a zero. Rounding up from just below 2^-14 gives
    // a count of 0x400: the smallest normal, as it should. (This relies on
    // the default rounding mode, to nearest even; nothing in normcore
    // changes it.)
    uint32_t subnormal = float_bits(bits_to_float(a) + 0.5f) - 0x3f000000u;
    uint32_t h = a < 0x38800000u ? subnormal : normal;
    // A NaN is inf by now; its quiet bit (0x200) makes it a NaN again.
    h |= (uint32_t)(a > 0x7f800000u) << 9;
    return {(uint16_t)(sign | h)};
}
NC_HOST_DEVICE inline float to_float(Float16 h) {
    uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
    if (e == 0) {  // zero or a subnormal: m units of 2^-24 (exact in float)
        float v = (float)m * 5.9604644775390625e-8f;
        return bits_to_float(float_bits(v) | sign);
    }
    if (e == 31) return bits_to_float(sign | 0x7f800000u | (m << 13));  // inf or NaN
    return bits_to_float(sign | ((e + 112) << 23) | (m << 13));
}

}  // namespace nc
