// gemm_kernel_portable.cpp — the micro-kernel in plain C++, for any CPU, and
// the only one for float64.
//
// Sizes are compile-time constants so the compiler can keep the accumulator
// block in registers and vectorize the j loop with whatever the build's
// -march allows (SSE2 at the very least on x86-64).
//
// Shapes: packed a [kc, mr], packed b [kc, nr] -> an mr x nr block of C
// (gemm.cpp): 8 x 16 in float, 8 x 8 in double.
#include <cmath>

#include "tensor/cpu/gemm_kernels.h"
#include "tensor/half.h"

namespace nc {
namespace cpu {

namespace {
template <typename T, int MR, int NR>
void kernel_portable(int64_t kc, const T* __restrict a, const T* __restrict b, T* __restrict c, int64_t ldc, int m,
                     int n, bool accumulate) {
    T acc[MR][NR] = {};
    for (int64_t p = 0; p < kc; ++p) {
        const T* bp = b + p * NR;
        for (int i = 0; i < MR; ++i) {
            T ai = a[p * MR + i];
            // `omp simd` asks for the vector loop here, along a row of the
            // block (left alone, GCC vectorizes across rows instead, with
            // strided accesses that make the kernel 10x slower).
#pragma omp simd
            for (int j = 0; j < NR; ++j) acc[i][j] += ai * bp[j];
        }
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}
// One multiply-add of the dot products' order: fused (one rounding), as in
// the hand-written kernels, wherever the build has a fused multiply-add
// instruction (FP_FAST_FMAF, from <cmath>). Written out, because whether
// the compiler fuses `c + a * b` by itself depends on the optimization
// level (not below -O2 with GCC). Without the instruction std::fma would
// be a slow library call, so a multiply and an add are used instead, and
// gemv.cpp then uses this kernel alone (dot_kernel_for_cache).
inline float multiply_add(float a, float b, float c) {
#ifdef FP_FAST_FMAF
    return std::fma(a, b, c);
#else
    return c + a * b;
#endif
}

// The order of gemm_kernels.h's DotColumnsFn, written out: kDotLanes
// partial sums per column, the partials added left to right. Four columns
// at a time (four independent chains of multiply-adds; the compiler turns
// each 16-lane loop into vector instructions of the build's width), or
// one after the other when streaming (one sequential read of B). B holds
// float32 or 16-bit numbers: `value` gives a stored number's float32 value.
template <typename Stored, typename Value>
void dot_columns_plain(int64_t K, const float* a, const Stored* b, int64_t b_cs, int64_t columns, Value value,
                       float* c, bool accumulate, bool streaming) {
    constexpr int L = kDotLanes;
    const int64_t group = streaming ? 1 : 4;
    for (int64_t j0 = 0; j0 < columns; j0 += group) {
        const int64_t count = columns - j0 < group ? columns - j0 : group;
        float partial[4][L] = {};
        int64_t k = 0;
        for (; k + L <= K; k += L)
            for (int64_t j = 0; j < count; ++j) {
                const Stored* w = b + (j0 + j) * b_cs + k;
#pragma omp simd
                for (int i = 0; i < L; ++i) partial[j][i] = multiply_add(a[k + i], value(w[i]), partial[j][i]);
            }
        for (int64_t j = 0; j < count; ++j) {
            const Stored* w = b + (j0 + j) * b_cs;
            for (int64_t t = k; t < K; ++t)  // the last K mod 16 terms
                partial[j][t - k] = multiply_add(a[t], value(w[t]), partial[j][t - k]);
            float sum = 0;
            for (int i = 0; i < L; ++i) sum += partial[j][i];
            c[j0 + j] = accumulate ? c[j0 + j] + sum : sum;
        }
    }
}

void dot_columns_portable(int64_t K, const float* a, const float* b, int64_t b_cs, int64_t columns, float* c,
                          bool accumulate, bool streaming) {
    dot_columns_plain(K, a, b, b_cs, columns, [](float x) { return x; }, c, accumulate, streaming);
}

// B in 16 bits, each number widened where it is read (half.h). The compiler
// leaves a float16 number's conversion (branches) scalar, so on x86 the AVX2
// kernel, which converts with an instruction (F16C), does this work (gemv.cpp).
void dot_columns_16bit_portable(int64_t K, const float* a, const uint16_t* b, int64_t b_cs, int64_t columns,
                                bool bfloat16, float* c, bool accumulate, bool streaming) {
    if (bfloat16)
        dot_columns_plain(K, a, b, b_cs, columns, [](uint16_t x) { return to_float(BFloat16{x}); }, c, accumulate,
                          streaming);
    else
        dot_columns_plain(K, a, b, b_cs, columns, [](uint16_t x) { return to_float(Float16{x}); }, c, accumulate,
                          streaming);
}
}  // namespace

const MicroKernel kPortableKernel{SimdIsa::Portable, 8, 16, kernel_portable<float, 8, 16>, nullptr, nullptr,
                                  dot_columns_portable, dot_columns_16bit_portable};
const MicroKernelDouble kDoubleKernel{8, 8, kernel_portable<double, 8, 8>};

float fma_loop_portable(int64_t iterations) {
    // 12 independent chains of 8 lanes, the same work shape as the AVX2 loop.
    float acc[12][8];
    for (int i = 0; i < 12; ++i)
        for (int l = 0; l < 8; ++l) acc[i][l] = 0.001f * (float)(i + l);
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i)
            for (int l = 0; l < 8; ++l) acc[i][l] = acc[i][l] * 0.9999f + 1e-5f;
    float total = 0;
    for (int i = 0; i < 12; ++i)
        for (int l = 0; l < 8; ++l) total += acc[i][l];
    return total;
}

}  // namespace cpu
}  // namespace nc
