// fast_math.h — exp and tanh for float32 written so the compiler can
// vectorize loops that call them.
//
// std::exp and std::tanh are library calls: a loop over them runs one
// element at a time (GCC only uses vector versions under -ffast-math, which
// we do not use because it changes results elsewhere). These versions are
// plain arithmetic with no branches, so `for (i) y[i] = exp_fast(x[i])`
// becomes AVX-512 code: 16 exponentials per instruction sequence (AVX2 and
// NEON code too, given -fno-trapping-math: the Makefile says why).
//
// The polynomials are Cephes' expf and tanhf (S. Moshier), accurate to about
// 2 ulp (relative error under 3e-7); tests/test_elementwise.cpp checks them
// against std::exp / std::tanh. The float64 overloads simply call the
// library, so gradcheck and float64 tests see libm's values.
//
// [[gnu::always_inline]]: a loop only vectorizes if the whole body is
// inlined into it, and inside a larger expression (GELU's derivative) GCC's
// heuristics otherwise left a call in the loop (15x slower).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace nc {
namespace cpu {

// e^x = 2^n e^r with n = round(x / ln 2) and |r| <= ln(2)/2 (a little more
// after rounding ties); e^r from a degree-7 polynomial, 2^n by writing n straight into the float's exponent.
[[gnu::always_inline]] inline float exp_fast(float x) {
    const float hi = 88.3762626647949f, lo = -87.3365447505531f;  // e^hi ~ FLT_MAX, e^lo ~ FLT_MIN
    // Clamped, and a NaN replaced by lo (its result is replaced at the end):
    // a NaN's n would turn into INT_MIN below, and shifting that is undefined.
    // std::max(lo, x) is (lo < x ? x : lo), false for a NaN: the very rule of
    // the max instruction (vmaxps), so the clamp is two plain instructions.
    // Written as x > hi ? hi : ..., plus a NaN test, GCC computed the whole
    // polynomial under a mask of the in-range lanes, and exp_fast ran about
    // 1.3x slower (1M values on 2 threads: 191 against 150 us;
    // bench/results/gelu-sigmoid-rope-2026-12-06.txt).
    float xc = std::min(std::max(lo, x), hi);
    // Round to the nearest integer by adding and subtracting 1.5 * 2^23: the
    // float adder rounds away the fraction. (std::floor is vector code only
    // under -fno-trapping-math, which the release build has but a build with
    // other flags may lack; the adder needs no flag.)
    const float round_magic = 12582912.0f;
    float n = (xc * 1.44269504088896341f + round_magic) - round_magic;
    // r = x - n ln2, with ln2 split in a short and a tiny part (Cody-Waite)
    // so n * 0.693359375 is exact and no accuracy is lost for large n.
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;  // the float 2^n
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    float y = p * scale;
    y = x > hi ? INFINITY : y;
    y = x < lo ? 0.0f : y;      // (the true value is a denormal or 0)
    return x != x ? x : y;      // NaN in, NaN out
}
inline double exp_fast(double x) { return std::exp(x); }

// Odd polynomial near 0 (where 1 - 2/(e^2x + 1) would cancel), the exp form
// beyond; both are computed and one selected, which keeps the loop branch-free.
[[gnu::always_inline]] inline float tanh_fast(float x) {
    float z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                    1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float ax = std::fabs(x);
    float e = exp_fast(2.0f * (ax < 10.0f ? ax : 10.0f));  // tanh(10) = 1 - 4e-9: 1 in float
    float large = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
    float y = ax < 0.625f ? small : large;
    return x != x ? x : y;  // NaN in, NaN out (the clamp above would make it +-1)
}
inline double tanh_fast(double x) { return std::tanh(x); }

// The maximum and the sum of x[0 .. n), and the dot product of x and y.
// The plain loops `m = max(m, x[i])` and `total += x[i]` stay scalar: GCC
// may not reorder float operations, so each step waits for the one before
// (4 cycles for an add). The maximum asks for the reordering with `omp simd
// reduction`: 16 running maxima in one vector register, combined at the end
// (a maximum is the same in any order, NaN aside: `m > x ? m : x` keeps a
// NaN only when it comes last, so a NaN may or may not come out; attention
// and the loss pass it on through the exponentials anyway). The sums keep
// 16 running sums written out, lane j adding terms j, j + 16, j + 32, ...,
// and add the lanes in a fixed tree at the end (add_lanes). Through `omp
// simd reduction` GCC added the 16 lanes one after another from memory: a
// row of 128 floats took 9 ns instead of 5, and attention's softmax sums
// such rows. A sum is rounded in a different order than the plain loop's,
// so the results differ in the last bits.
template <typename T>
inline T max_of(const T* x, int64_t n, T start) {
    T m = start;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) m = m > x[i] ? m : x[i];
    return m;
}
constexpr int kRowLanes = 16;  // sum_of's and dot_of's running sums: one AVX-512 register of floats
template <typename T>
inline T add_lanes(T* lane) {
    static_assert(kRowLanes == 16, "the tree adds 16 lanes");
    for (int j = 0; j < 8; ++j) lane[j] += lane[j + 8];
    for (int j = 0; j < 4; ++j) lane[j] += lane[j + 4];
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}
template <typename T>
inline T sum_of(const T* x, int64_t n) {
    T lane[kRowLanes] = {};
    int64_t i = 0;
    for (; i + kRowLanes <= n; i += kRowLanes)
        for (int j = 0; j < kRowLanes; ++j) lane[j] += x[i + j];
    for (int j = 0; i + j < n; ++j) lane[j] += x[i + j];  // the last n % 16 terms, in lanes 0, 1, ...
    return add_lanes(lane);
}
template <typename T>
inline T dot_of(const T* x, const T* y, int64_t n) {
    T lane[kRowLanes] = {};
    int64_t i = 0;
    for (; i + kRowLanes <= n; i += kRowLanes)
        for (int j = 0; j < kRowLanes; ++j) lane[j] += x[i + j] * y[i + j];
    for (int j = 0; i + j < n; ++j) lane[j] += x[i + j] * y[i + j];
    return add_lanes(lane);
}

// Sums along a row in double are kept in kSumLanes running sums. With one
// running sum each addition waits for the one before (about four cycles),
// and the loop around it cannot become vector code. The norms', DyT's and
// GeoNorm's loops ask for the lanes with `omp simd simdlen(kSumLanes)
// reduction(+ : ...)`, which leaves the order of the additions to the
// compiler: it may differ between builds (at -O0 the loop stays one running
// sum) and between two loops. What the tests check (tests/test_nn_ops.cpp)
// is that within a build a row's result does not depend on its address or
// on the rows beside it. sum_in_double, below, writes the lanes out.
constexpr int kSumLanes = 8;

// The sum of x[0 .. n) accumulated in double (sums of many float32 terms
// stay accurate), in kSumLanes running sums written out: lane j adds x[j],
// x[j + 8], x[j + 16], ..., and the lanes are added in a fixed tree at the
// end. Written out rather than left to `omp simd`, the order is the same in
// every build and at every call site (through `omp simd` the same numbers
// summed in two places of reduce.cpp once gave different float64 bits); the
// compiler still turns the eight lanes into one vector register.
template <typename T>
inline double sum_in_double(const T* x, int64_t n) {
    static_assert(kSumLanes == 8, "the tree at the end adds 8 lanes");
    double lane[kSumLanes] = {};
    int64_t i = 0;
    for (; i + kSumLanes <= n; i += kSumLanes)
        for (int j = 0; j < kSumLanes; ++j) lane[j] += x[i + j];
    for (int j = 0; i + j < n; ++j) lane[j] += x[i + j];  // the last n % 8 numbers, in lanes 0, 1, ...
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

}  // namespace cpu
}  // namespace nc
