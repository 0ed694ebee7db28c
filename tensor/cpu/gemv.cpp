// gemv.cpp — the one-row product of gemv.h, B read in place.
//
// The dot products (x W^T, q K^T) go through the dot_columns kernel of
// gemm_kernels.h: 16 partial sums per column, added up at the end in an
// order fixed for every CPU, by hand-written AVX-512 where the CPU has it
// and plain C++ elsewhere. The sums of scaled rows (p V) are plain C++ with
// `omp simd`, which lets the compiler use the vector width of the build's
// -march (16 floats on AVX-512, 8 on AVX2, 4 on NEON). With 16-bit
// operands (gemv_16bit) the dot products go through a dot_columns_16bit
// kernel, which widens each number of B as it loads it and adds in the
// same order (dot_16bit_kernel below says which kernel runs where).
#include "tensor/cpu/gemv.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <omp.h>

#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemm_16bit.h"
#include "tensor/cpu/gemm_kernels.h"
#include "tensor/cpu/parallel.h"

namespace nc {
namespace cpu {

namespace {

// Below this many multiply-adds one thread finishes before a team of
// threads would have started (waking them costs a few microseconds): every
// product of the default model (C = 128, at most 128 x 512 = 65,536)
// stays on one thread; every weight product of GPT-2 124M (the smallest,
// 768 x 768, is 589,824) is split. parallel.h's element threshold times 4
// (2^17): a multiply-add streams one weight, and two threads only paid
// from about twice the default model's largest product on.
constexpr int64_t kGemvParallelMin = 4 * kParallelMin;

// A B of more bytes than this is taken to come from memory, not from the
// cache (1 MiB: the L2 cache of one core here; laptop cores have 0.5-2 MiB).
constexpr int64_t kFromMemoryBytes = int64_t(1) << 20;

// c[n] (+)= dot(a, B[:, n]) for first <= n < last, B's columns contiguous
// (column n starts at B + n * b_cs), through a dot_columns kernel
// (gemm_kernels.h). Which order pays depends on where B is:
//  - in the cache (the default model's weights, a short cache of keys):
//    the sums' latency limits, so 16 columns at a time, 16 independent
//    chains of multiply-adds, each loaded piece of a used 16 times;
//  - in memory (GPT-2 124M's weights): the reading limits. A weight
//    matrix's columns lie end to end, and one column after the other reads
//    B as one sequential stream, which the hardware prefetcher serves best;
//    several columns at a time are as many short streams. With the weights
//    in 2 MiB-aligned blocks (allocator.cpp), four columns at a time read
//    GPT-2 124M's weights at 30-36 GB/s, one at a time at 55-56 (with
//    64-byte alignment both read about 32)
//    (bench/results/gemv-stream-2026-12-05.txt).
// From memory the plain C++ kernel runs, even on a CPU with a kernel of its
// own: the AVX-512 kernel's one-column loop read GPT-2 124M's weights 15-20%
// slower (23.5-26.7 against 28.7-31.1 GB/s on one thread, best of 8 passes
// over them), although its loop has the same instructions; we have not
// found why. Every kernel adds each sum in the same order however many
// columns it takes at once (gemm_kernels.h), so all ways give the same bits.
void dot_products(int64_t first, int64_t last, int64_t K, const float* a, const float* B, int64_t b_cs, float* c,
                  bool accumulate, bool from_memory) {
    const DotColumnsFn dot = from_memory ? kPortableKernel.dot_columns : dot_kernel_for_cache();
    dot(K, a, B + first * b_cs, b_cs, last - first, c + first, accumulate, from_memory);
}

// c[0:WIDTH] (+)= sum_k a[k] B[k, 0:WIDTH] for a width known when compiling:
// the sums stay in registers across all k, where the loop below keeps them
// in memory and puts a store and a load into each multiply-add's chain. The
// same multiply-adds in the same order, so the same bits.
template <int WIDTH>
void scaled_rows_in_registers(int64_t K, const float* a, int64_t a_cs, const float* B, int64_t b_rs, float* c,
                              bool accumulate) {
    float sums[WIDTH];
    for (int j = 0; j < WIDTH; ++j) sums[j] = accumulate ? c[j] : 0.0f;
    for (int64_t k = 0; k < K; ++k) {
        const float ak = a[k * a_cs], *row = B + k * b_rs;
#pragma omp simd
        for (int j = 0; j < WIDTH; ++j) sums[j] += ak * row[j];
    }
    for (int j = 0; j < WIDTH; ++j) c[j] = sums[j];
}

// c[first:last] (+)= sum_k a[k] B[k, first:last], B's rows contiguous (row k
// starts at B + k * b_rs). The columns go in pieces of 1024 so that the
// piece of c being summed into stays in the L1 cache across all k. A
// head's values in attention (p V, 32 or 64 columns) keep the sums in
// registers.
void scaled_rows(int64_t first, int64_t last, int64_t K, const float* a, int64_t a_cs, const float* B, int64_t b_rs,
                 float* c, bool accumulate) {
    switch (last - first) {
        case 32: return scaled_rows_in_registers<32>(K, a, a_cs, B + first, b_rs, c + first, accumulate);
        case 64: return scaled_rows_in_registers<64>(K, a, a_cs, B + first, b_rs, c + first, accumulate);
    }
    constexpr int64_t kPiece = 1024;
    for (int64_t j0 = first; j0 < last; j0 += kPiece) {
        int64_t width = std::min(kPiece, last - j0);
        float* out = c + j0;
        if (!accumulate) std::fill_n(out, width, 0.0f);
        for (int64_t k = 0; k < K; ++k) {
            const float ak = a[k * a_cs], *row = B + k * b_rs + j0;
#pragma omp simd
            for (int64_t j = 0; j < width; ++j) out[j] += ak * row[j];
        }
    }
}

// Runs columns(first, last) over the N columns of a one-row product with
// K multiply-adds each: on the calling thread below kGemvParallelMin in all,
// else each thread of the team on an equal run of columns, cut at multiples
// of 16 (when c is 64-byte aligned, as a fresh tensor is: whole cache
// lines, so no two threads write the same line).
template <typename Columns>
void by_column_runs(int64_t N, int64_t K, bool allow_threads, const Columns& columns) {
    const int threads = allow_threads && N * K >= kGemvParallelMin ? omp_get_max_threads() : 1;
    if (threads == 1) {  // no parallel region at all: even an inactive one costs ~0.3 us
        columns(0, N);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        const int me = omp_get_thread_num(), team = omp_get_num_threads();
        auto boundary = [&](int t) { return t == team ? N : N * t / team / 16 * 16; };
        columns(boundary(me), boundary(me + 1));
    }
}

}  // namespace

// The CPU's own dot_columns kernel where it has one; the plain C++ one where
// it has none, or where this build has no fused multiply-add instruction
// (FP_FAST_FMAF): the hand-written kernels always fuse, the plain one then
// does not, and B's two paths below must give the same bits.
DotColumnsFn dot_kernel_for_cache() {
    static const DotColumnsFn dot = [] {
#ifdef FP_FAST_FMAF
        if (DotColumnsFn own = micro_kernel_for(best_simd_isa()).dot_columns) return own;
#endif
        return kPortableKernel.dot_columns;
    }();
    return dot;
}

bool gemv(int64_t N, int64_t K, const float* a, int64_t a_cs, const float* B, int64_t b_rs, int64_t b_cs, float* c,
          bool accumulate, bool allow_threads) {
    const bool columns_contiguous = b_rs == 1, rows_contiguous = b_cs == 1;
    if (!columns_contiguous && !rows_contiguous) return false;
    // The dot products want a contiguous a too; a strided one (rare: a
    // transposed activation) is copied first, K numbers.
    std::vector<float> a_copy;
    if (columns_contiguous && a_cs != 1) {
        a_copy.resize(K);
        for (int64_t k = 0; k < K; ++k) a_copy[k] = a[k * a_cs];
        a = a_copy.data();
    }
    const bool from_memory = N * K * (int64_t)sizeof(float) > kFromMemoryBytes;
    auto columns = [&](int64_t first, int64_t last) {
        if (columns_contiguous)
            dot_products(first, last, K, a, B, b_cs, c, accumulate, from_memory);
        else
            scaled_rows(first, last, K, a, a_cs, B, b_rs, c, accumulate);
    };
    by_column_runs(N, K, allow_threads, columns);
    return true;
}

// The dot products of B in 16 bits: the AVX2 kernel's wherever the CPU has
// AVX2, AVX-512 CPUs too (two chains of 8 lanes per column streamed
// bfloat16 faster on a Zen 4 than one chain of 16, and it converts float16
// with one instruction, F16C), NEON's on 64-bit ARM (also one instruction
// for float16), else the plain C++ one. Unlike float32's, all of them give
// the same bits even where the plain one cannot fuse its multiply-adds:
// each product of two 16-bit numbers is exact in float32, so a fused
// multiply-add and a multiply then an add round the same sum (barring a
// bfloat16 product that overflows or falls below float32's normal numbers:
// bfloat16 has float32's exponents).
static DotColumns16Fn dot_16bit_kernel() {
    static const DotColumns16Fn dot = [] {
#if defined(__x86_64__) || defined(__i386__)
        if (cpu_supports(SimdIsa::Avx2)) return kAvx2Kernel.dot_columns_16bit;
#endif
#if defined(__aarch64__)
        return kNeonKernel.dot_columns_16bit;  // NEON converts float16 with an instruction too (fcvtl)
#endif
        return kPortableKernel.dot_columns_16bit;
    }();
    return dot;
}

bool gemv_16bit(int64_t N, int64_t K, DType dtype, const uint16_t* a, int64_t a_cs, const uint16_t* B, int64_t b_rs,
                int64_t b_cs, float* c, bool accumulate, bool allow_threads) {
    if (b_rs != 1) return false;
    // a is widened once, K numbers; each number of B where the kernel reads it.
    ScratchBuffer<float> a_wide((size_t)K);  // from the caching allocator: no heap call per product
    if (a_cs == 1) widen_run(a, K, dtype, a_wide.data());
    else
        for (int64_t k = 0; k < K; ++k) widen_run(a + k * a_cs, 1, dtype, &a_wide[k]);
    const bool from_memory = N * K * (int64_t)sizeof(uint16_t) > kFromMemoryBytes;
    const DotColumns16Fn dot = dot_16bit_kernel();
    by_column_runs(N, K, allow_threads, [&](int64_t first, int64_t last) {
        dot(K, a_wide.data(), B + first * b_cs, b_cs, last - first, dtype == kBFloat16, c + first, accumulate,
            from_memory);
    });
    return true;
}

}  // namespace cpu
}  // namespace nc
