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

// float16 from float32's sign a, exponent e (bias 127) and 23 mantissa bits.
NC_HOST_DEVICE inline Float16 to_float16(float f) {
    uint32_t u = float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return {(uint16_t)(sign | 0x7e00u)};  // NaN (quiet)
    // 65504 is the largest float16; from 65520 (half an ulp above) a value
    // rounds to 65536, which float16 cannot hold: inf. The tie at 65520
    // goes to the even neighbour, inf too.
    if (a >= 0x477ff000u) return {(uint16_t)(sign | 0x7c00u)};
    if (a < 0x38800000u) {  // below 2^-14, float16's smallest normal: a subnormal, 2^-24 per unit
        uint32_t e = a >> 23;
        if (e < 102) return {(uint16_t)sign};  // below 2^-25, half the smallest subnormal: 0
        // value = m 2^(e - 150) with the 24-bit significand m, = (m >> (126 - e)) units of 2^-24.
        uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
        uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1u))) ++q;  // a carry to 0x400 is the smallest normal
        return {(uint16_t)(sign | q)};
    }
    // A normal: rebias the exponent (127 -> 15) and round 23 mantissa bits to
    // 10 as bfloat16 does 16 to 0 (a carry moves into the exponent).
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return {(uint16_t)(sign | (r >> 13))};
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
